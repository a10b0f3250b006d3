// D=64 bf16: the forward defaults; the backward default (three kernels) and the same with warp_specialize (gp).
func.func @attention_fwd_bf16_d64_m128n128w8qs2gopter(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>, %out: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, q_in_shared = true, num_stages = 2, skip_unit_rescale = false, stage_output = true, wgmma = true, overlap_softmax = true, warp_specialize = true, ping_pong = true, persistent = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>) outs(%out : memref<?x?x?x64xbf16>) lse(%lse : memref<?x?x?xf32>) 
  return
}
func.func @attention_bwd_bf16_d64_m128n64w8s2_q64x64w4g(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>, %out: memref<?x?x?x64xbf16>, %dout: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x64xbf16>, %dk: memref<?x?x?x64xbf16>, %dv: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true>} {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>) 
  return
}
func.func @attention_bwd_bf16_d64_m128n64w8s2_q64x64w4gp(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>, %out: memref<?x?x?x64xbf16>, %dout: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x64xbf16>, %dk: memref<?x?x?x64xbf16>, %dv: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true, warp_specialize = true>} {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>) 
  return
}
func.func @attention_fwd_bf16_d64_causal_m128n128w8qs2gopter(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>, %out: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, q_in_shared = true, num_stages = 2, skip_unit_rescale = false, stage_output = true, wgmma = true, overlap_softmax = true, warp_specialize = true, ping_pong = true, persistent = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>) outs(%out : memref<?x?x?x64xbf16>) lse(%lse : memref<?x?x?xf32>) causal
  return
}
func.func @attention_bwd_bf16_d64_causal_m128n64w8s2_q64x64w4g(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>, %out: memref<?x?x?x64xbf16>, %dout: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x64xbf16>, %dk: memref<?x?x?x64xbf16>, %dv: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true>} {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>) causal
  return
}
func.func @attention_bwd_bf16_d64_causal_m128n64w8s2_q64x64w4gp(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>, %out: memref<?x?x?x64xbf16>, %dout: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x64xbf16>, %dk: memref<?x?x?x64xbf16>, %dv: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true, warp_specialize = true>} {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>) causal
  return
}
