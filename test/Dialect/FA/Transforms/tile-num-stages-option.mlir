// RUN: fa-opt %s --fa-tile-attention=num-stages=3 --fa-tile-attention-grad=num-stages=3 --split-input-file --verify-diagnostics

// A num_stages other than 1 or 2 is a parse error in #fa.tile
// (attrs-invalid.mlir); through the passes' num-stages option each pass
// refuses it.

// expected-error @+1 {{fa-tile-attention: num-stages 3 is not supported (1: one K and one V buffer, 2: two each)}}
func.func @forward(%q: memref<1x1x8x64xf16>) {
  fa.attention ins(%q, %q, %q : memref<1x1x8x64xf16>, memref<1x1x8x64xf16>, memref<1x1x8x64xf16>) outs(%q : memref<1x1x8x64xf16>)
  return
}

// -----

!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
// expected-error @+1 {{fa-tile-attention-grad: num_stages must be 1 (synchronous copies) or 2, not 3}}
func.func @backward(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}
