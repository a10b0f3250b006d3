// RUN: fa-opt %s -split-input-file -verify-diagnostics
// The verifier rules of the residual operands of fa.layernorm and
// fa.layernorm_grad; each case would parse cleanly without its rule.

func.func @residual_without_sum(%x: memref<16x256xbf16>, %w: memref<256xbf16>, %b: memref<256xbf16>, %r: memref<16x256xbf16>, %y: memref<16x256xbf16>, %eps: f32) {
  // expected-error @+1 {{expects residual and sum to be given together (sum receives x + residual, the rows normalised)}}
  fa.layernorm ins(%x, %w, %b : memref<16x256xbf16>, memref<256xbf16>, memref<256xbf16>) residual(%r : memref<16x256xbf16>) outs(%y : memref<16x256xbf16>) eps(%eps : f32)
  return
}

// -----

func.func @sum_without_residual(%x: memref<16x256xbf16>, %w: memref<256xbf16>, %b: memref<256xbf16>, %y: memref<16x256xbf16>, %s: memref<16x256xbf16>, %eps: f32) {
  // expected-error @+1 {{expects residual and sum to be given together}}
  fa.layernorm ins(%x, %w, %b : memref<16x256xbf16>, memref<256xbf16>, memref<256xbf16>) outs(%y : memref<16x256xbf16>) sum(%s : memref<16x256xbf16>) eps(%eps : f32)
  return
}

// -----

func.func @residual_type(%x: memref<16x256xbf16>, %w: memref<256xbf16>, %b: memref<256xbf16>, %r: memref<16x256xf32>, %y: memref<16x256xbf16>, %s: memref<16x256xbf16>, %eps: f32) {
  // expected-error @+1 {{expects residual element type 'f32' to equal x element type 'bf16'}}
  fa.layernorm ins(%x, %w, %b : memref<16x256xbf16>, memref<256xbf16>, memref<256xbf16>) residual(%r : memref<16x256xf32>) outs(%y : memref<16x256xbf16>) sum(%s : memref<16x256xbf16>) eps(%eps : f32)
  return
}

// -----

func.func @residual_shape(%x: memref<16x256xbf16>, %w: memref<256xbf16>, %b: memref<256xbf16>, %r: memref<8x256xbf16>, %y: memref<16x256xbf16>, %s: memref<16x256xbf16>, %eps: f32) {
  // expected-error @+1 {{expects residual dimension 0 (8) to equal x dimension 0 (16)}}
  fa.layernorm ins(%x, %w, %b : memref<16x256xbf16>, memref<256xbf16>, memref<256xbf16>) residual(%r : memref<8x256xbf16>) outs(%y : memref<16x256xbf16>) sum(%s : memref<16x256xbf16>) eps(%eps : f32)
  return
}

// -----

func.func @sum_rank(%x: memref<16x256xbf16>, %w: memref<256xbf16>, %b: memref<256xbf16>, %r: memref<16x256xbf16>, %y: memref<16x256xbf16>, %s: memref<4x16x256xbf16>, %eps: f32) {
  // expected-error @+1 {{expects sum rank 3 to equal x rank 2}}
  fa.layernorm ins(%x, %w, %b : memref<16x256xbf16>, memref<256xbf16>, memref<256xbf16>) residual(%r : memref<16x256xbf16>) outs(%y : memref<16x256xbf16>) sum(%s : memref<4x16x256xbf16>) eps(%eps : f32)
  return
}

// -----

func.func @sum_shared(%x: memref<16x256xbf16>, %w: memref<256xbf16>, %b: memref<256xbf16>, %r: memref<16x256xbf16>, %y: memref<16x256xbf16>, %s: memref<16x256xbf16, 3>, %eps: f32) {
  // expected-error @+1 {{expects operand #5 in the default memory space (device memory), got 'memref<16x256xbf16, 3>'}}
  fa.layernorm ins(%x, %w, %b : memref<16x256xbf16>, memref<256xbf16>, memref<256xbf16>) residual(%r : memref<16x256xbf16>) outs(%y : memref<16x256xbf16>) sum(%s : memref<16x256xbf16, 3>) eps(%eps : f32)
  return
}

// -----

func.func @dresidual_shape(%x: memref<16x256xf16>, %w: memref<256xf16>, %mean: memref<16xf32>, %rstd: memref<16xf32>, %dy: memref<16x256xf16>, %g: memref<16x128xf16>, %dx: memref<16x256xf16>, %dw: memref<256xf32>, %db: memref<256xf32>) {
  // expected-error @+1 {{expects dresidual dimension 1 (128) to equal x dimension 1 (256)}}
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<16x256xf16>, memref<256xf16>, memref<16xf32>, memref<16xf32>, memref<16x256xf16>) dresidual(%g : memref<16x128xf16>) outs(%dx, %dw, %db : memref<16x256xf16>, memref<256xf32>, memref<256xf32>)
  return
}

// -----

func.func @dresidual_type(%x: memref<16x256xf16>, %w: memref<256xf16>, %mean: memref<16xf32>, %rstd: memref<16xf32>, %dy: memref<16x256xf16>, %g: memref<16x256xbf16>, %dx: memref<16x256xf16>, %dw: memref<256xf32>, %db: memref<256xf32>) {
  // expected-error @+1 {{expects dresidual element type 'bf16' to equal x element type 'f16'}}
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<16x256xf16>, memref<256xf16>, memref<16xf32>, memref<16xf32>, memref<16x256xf16>) dresidual(%g : memref<16x256xbf16>) outs(%dx, %dw, %db : memref<16x256xf16>, memref<256xf32>, memref<256xf32>)
  return
}
