// RUN: fa-opt %s -split-input-file -verify-diagnostics
// Malformed syntax gets a located diagnostic from the custom parsers (and
// fa-opt exits non-zero: see not-fa-opt.mlir).

func.func @misspelt_keyword(%q: memref<1x1x8x64xf16>) {
  // expected-error @+1 {{custom op 'causl' is unknown}}
  fa.attention ins(%q, %q, %q : memref<1x1x8x64xf16>, memref<1x1x8x64xf16>, memref<1x1x8x64xf16>) outs(%q : memref<1x1x8x64xf16>) causl
  return
}

// -----

func.func @missing_eps(%x: memref<4x8xf32>, %w: memref<8xf32>) {
  fa.layernorm ins(%x, %w, %w : memref<4x8xf32>, memref<8xf32>, memref<8xf32>) outs(%x : memref<4x8xf32>)
  // expected-error @+1 {{custom op 'fa.layernorm' expected 'eps'}}
  return
}

// -----

// eps is a value (a kernel parameter), no longer a compile-time attribute.
func.func @eps_attribute(%x: memref<4x8xf32>, %w: memref<8xf32>) {
  // expected-error @+1 {{expected SSA operand}}
  fa.layernorm ins(%x, %w, %w : memref<4x8xf32>, memref<8xf32>, memref<8xf32>) outs(%x : memref<4x8xf32>) eps(1.0e-05)
  return
}

// -----

func.func @operand_type_mismatch(%q: memref<1x1x8x64xf16>) {
  // expected-error @+2 {{use of value '%q' expects different type than prior uses: 'memref<1x1x8x64xbf16>' vs 'memref<1x1x8x64xf16>'}}
  // expected-note @-2 {{prior use here}}
  fa.attention ins(%q, %q, %q : memref<1x1x8x64xbf16>, memref<1x1x8x64xf16>, memref<1x1x8x64xf16>) outs(%q : memref<1x1x8x64xf16>)
  return
}

// -----

func.func @tensor_instead_of_memref(%q: tensor<1x1x8x64xf16>) {
  // expected-error @+1 {{invalid kind of type specified: expected builtin.memref, but found 'tensor<1x1x8x64xf16>'}}
  fa.attention ins(%q, %q, %q : tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16>) outs(%q : tensor<1x1x8x64xf16>)
  return
}

// -----

func.func @non_numeric_scale(%q: memref<1x1x8x64xf16>) {
  // expected-error @+1 {{expected attribute value}}
  fa.attention ins(%q, %q, %q : memref<1x1x8x64xf16>, memref<1x1x8x64xf16>, memref<1x1x8x64xf16>) outs(%q : memref<1x1x8x64xf16>) scale(big)
  return
}
