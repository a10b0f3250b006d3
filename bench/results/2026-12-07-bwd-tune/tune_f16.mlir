// The f16 twin of tune.mlir (the library's D=128 f16 groups).
func.func @attention_fwd_f16_d128_m128n128w8qs2gopter(%q: memref<?x?x?x128xf16>, %k: memref<?x?x?x128xf16>, %v: memref<?x?x?x128xf16>, %out: memref<?x?x?x128xf16>, %lse: memref<?x?x?xf32>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, q_in_shared = true, num_stages = 2, stage_output = true, wgmma = true, overlap_softmax = true, warp_specialize = true, ping_pong = true, persistent = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>) outs(%out : memref<?x?x?x128xf16>) lse(%lse : memref<?x?x?xf32>) 
  return
}
func.func @attention_fwd_f16_d128_causal_m128n128w8qs2gopte(%q: memref<?x?x?x128xf16>, %k: memref<?x?x?x128xf16>, %v: memref<?x?x?x128xf16>, %out: memref<?x?x?x128xf16>, %lse: memref<?x?x?xf32>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, q_in_shared = true, num_stages = 2, stage_output = true, wgmma = true, overlap_softmax = true, warp_specialize = true, ping_pong = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>) outs(%out : memref<?x?x?x128xf16>) lse(%lse : memref<?x?x?xf32>) causal
  return
}
func.func @attention_bwd_f16_d128_m128n64w8s2_q64x64w4gp(%q: memref<?x?x?x128xf16>, %k: memref<?x?x?x128xf16>, %v: memref<?x?x?x128xf16>, %out: memref<?x?x?x128xf16>, %dout: memref<?x?x?x128xf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x128xf16>, %dk: memref<?x?x?x128xf16>, %dv: memref<?x?x?x128xf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true, warp_specialize = true>} {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>) 
  return
}
func.func @attention_bwd_f16_d128_m128n64w8s2_q64x64w4gpf(%q: memref<?x?x?x128xf16>, %k: memref<?x?x?x128xf16>, %v: memref<?x?x?x128xf16>, %out: memref<?x?x?x128xf16>, %dout: memref<?x?x?x128xf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x128xf16>, %dk: memref<?x?x?x128xf16>, %dv: memref<?x?x?x128xf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true, warp_specialize = true, fuse_dq = true>} {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>) 
  return
}
func.func @attention_bwd_f16_d128_causal_m128n64w8s2_q64x64w4gp(%q: memref<?x?x?x128xf16>, %k: memref<?x?x?x128xf16>, %v: memref<?x?x?x128xf16>, %out: memref<?x?x?x128xf16>, %dout: memref<?x?x?x128xf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x128xf16>, %dk: memref<?x?x?x128xf16>, %dv: memref<?x?x?x128xf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true, warp_specialize = true>} {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>) causal
  return
}
func.func @attention_bwd_f16_d128_causal_m128n64w8s2_q64x64w4gpf(%q: memref<?x?x?x128xf16>, %k: memref<?x?x?x128xf16>, %v: memref<?x?x?x128xf16>, %out: memref<?x?x?x128xf16>, %dout: memref<?x?x?x128xf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x128xf16>, %dk: memref<?x?x?x128xf16>, %dv: memref<?x?x?x128xf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true, warp_specialize = true, fuse_dq = true>} {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>) causal
  return
}
