// LayerNorm bf16 kernels for 768 columns: the library's (r2c1024w4p, r1c1024w4) and 768-column candidates.
func.func @layernorm_fwd_bf16_r2c1024w4p(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %b: memref<?xbf16>, %y: memref<?x?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %eps: f32) attributes {fa.rows = #fa.rows<rows = 2, block_cols = 1024, num_warps = 4, resident = true, persistent = true>} {
  fa.layernorm ins(%x, %w, %b : memref<?x?xbf16>, memref<?xbf16>, memref<?xbf16>) outs(%y : memref<?x?xbf16>) stats(%mean, %rstd : memref<?xf32>, memref<?xf32>) eps(%eps : f32)
  return
}
func.func @layernorm_fwd_bf16_r4c768w4(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %b: memref<?xbf16>, %y: memref<?x?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %eps: f32) attributes {fa.rows = #fa.rows<rows = 4, block_cols = 768, num_warps = 4, resident = true>} {
  fa.layernorm ins(%x, %w, %b : memref<?x?xbf16>, memref<?xbf16>, memref<?xbf16>) outs(%y : memref<?x?xbf16>) stats(%mean, %rstd : memref<?xf32>, memref<?xf32>) eps(%eps : f32)
  return
}
func.func @layernorm_fwd_bf16_r4c768w4p(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %b: memref<?xbf16>, %y: memref<?x?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %eps: f32) attributes {fa.rows = #fa.rows<rows = 4, block_cols = 768, num_warps = 4, resident = true, persistent = true>} {
  fa.layernorm ins(%x, %w, %b : memref<?x?xbf16>, memref<?xbf16>, memref<?xbf16>) outs(%y : memref<?x?xbf16>) stats(%mean, %rstd : memref<?xf32>, memref<?xf32>) eps(%eps : f32)
  return
}
func.func @layernorm_fwd_bf16_r8c768w8p(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %b: memref<?xbf16>, %y: memref<?x?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %eps: f32) attributes {fa.rows = #fa.rows<rows = 8, block_cols = 768, num_warps = 8, resident = true, persistent = true>} {
  fa.layernorm ins(%x, %w, %b : memref<?x?xbf16>, memref<?xbf16>, memref<?xbf16>) outs(%y : memref<?x?xbf16>) stats(%mean, %rstd : memref<?xf32>, memref<?xf32>) eps(%eps : f32)
  return
}
func.func @layernorm_fwd_bf16_r8c768w8(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %b: memref<?xbf16>, %y: memref<?x?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %eps: f32) attributes {fa.rows = #fa.rows<rows = 8, block_cols = 768, num_warps = 8, resident = true>} {
  fa.layernorm ins(%x, %w, %b : memref<?x?xbf16>, memref<?xbf16>, memref<?xbf16>) outs(%y : memref<?x?xbf16>) stats(%mean, %rstd : memref<?xf32>, memref<?xf32>) eps(%eps : f32)
  return
}
func.func @layernorm_bwd_bf16_r1c1024w4(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %dy: memref<?x?xbf16>, %dx: memref<?x?xbf16>, %dw: memref<?xf32>, %db: memref<?xf32>) attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = true>} {
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<?x?xbf16>, memref<?xbf16>, memref<?xf32>, memref<?xf32>, memref<?x?xbf16>) outs(%dx, %dw, %db : memref<?x?xbf16>, memref<?xf32>, memref<?xf32>)
  return
}
func.func @layernorm_bwd_bf16_r4c768w4(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %dy: memref<?x?xbf16>, %dx: memref<?x?xbf16>, %dw: memref<?xf32>, %db: memref<?xf32>) attributes {fa.rows = #fa.rows<rows = 4, block_cols = 768, num_warps = 4, resident = true>} {
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<?x?xbf16>, memref<?xbf16>, memref<?xf32>, memref<?xf32>, memref<?x?xbf16>) outs(%dx, %dw, %db : memref<?x?xbf16>, memref<?xf32>, memref<?xf32>)
  return
}
func.func @layernorm_bwd_bf16_r8c768w8(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %dy: memref<?x?xbf16>, %dx: memref<?x?xbf16>, %dw: memref<?xf32>, %db: memref<?xf32>) attributes {fa.rows = #fa.rows<rows = 8, block_cols = 768, num_warps = 8, resident = true>} {
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<?x?xbf16>, memref<?xbf16>, memref<?xf32>, memref<?xf32>, memref<?x?xbf16>) outs(%dx, %dw, %db : memref<?x?xbf16>, memref<?xf32>, memref<?xf32>)
  return
}
