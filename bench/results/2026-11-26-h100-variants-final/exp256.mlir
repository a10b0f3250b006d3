func.func @exp_fwd_d256(%q: memref<?x?x?x256xbf16>, %k: memref<?x?x?x256xbf16>, %v: memref<?x?x?x256xbf16>, %out: memref<?x?x?x256xbf16>, %lse: memref<?x?x?xf32>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, q_in_shared = true, num_stages = 2, wgmma = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>) outs(%out : memref<?x?x?x256xbf16>) lse(%lse : memref<?x?x?xf32>) 
  return
}
func.func @exp_bwd_d256_dq128(%q: memref<?x?x?x256xbf16>, %k: memref<?x?x?x256xbf16>, %v: memref<?x?x?x256xbf16>, %out: memref<?x?x?x256xbf16>, %dout: memref<?x?x?x256xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x256xbf16>, %dk: memref<?x?x?x256xbf16>, %dv: memref<?x?x?x256xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, dq_block_m = 128, dq_block_n = 32, dq_num_warps = 8, wgmma = true, split_dkdv = true>} {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>) 
  return
}
func.func @exp_fwd_d256_causal(%q: memref<?x?x?x256xbf16>, %k: memref<?x?x?x256xbf16>, %v: memref<?x?x?x256xbf16>, %out: memref<?x?x?x256xbf16>, %lse: memref<?x?x?xf32>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, q_in_shared = true, num_stages = 2, wgmma = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>) outs(%out : memref<?x?x?x256xbf16>) lse(%lse : memref<?x?x?xf32>) causal
  return
}
func.func @exp_bwd_d256_dq128_causal(%q: memref<?x?x?x256xbf16>, %k: memref<?x?x?x256xbf16>, %v: memref<?x?x?x256xbf16>, %out: memref<?x?x?x256xbf16>, %dout: memref<?x?x?x256xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x256xbf16>, %dk: memref<?x?x?x256xbf16>, %dv: memref<?x?x?x256xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, dq_block_m = 128, dq_block_n = 32, dq_num_warps = 8, wgmma = true, split_dkdv = true>} {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>) causal
  return
}
