func.func @exp_window_fwd_s1(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>, %out: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>, %window_left: index, %window_right: index) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, q_in_shared = true, num_stages = 1, wgmma = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>) outs(%out : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>) causal window(%window_left, %window_right)
  return
}
func.func @exp_window_fwd_s2(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>, %out: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>, %window_left: index, %window_right: index) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, q_in_shared = true, num_stages = 2, wgmma = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>) outs(%out : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>) causal window(%window_left, %window_right)
  return
}
func.func @exp_document_fwd_s1(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>, %out: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>, %doc_ids: memref<?x?xi32>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, q_in_shared = true, num_stages = 1, wgmma = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>) outs(%out : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>) causal document(%doc_ids : memref<?x?xi32>)
  return
}
func.func @exp_document_fwd_s2(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>, %out: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>, %doc_ids: memref<?x?xi32>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, q_in_shared = true, num_stages = 2, wgmma = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>) outs(%out : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>) causal document(%doc_ids : memref<?x?xi32>)
  return
}
