// RUN: fa-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: fa-opt %s --split-input-file --verify-diagnostics --mlir-print-op-generic | fa-opt --split-input-file | FileCheck %s

// The attention tensors may be strided views with a contiguous head_dim
// (innermost stride 1): one head of a fused [batch, seq, 3C] QKV product is
// q[b, h, t, d] at strides (seq * 3C, head_dim, 3C, 1), dynamic here as the
// kernel library has them. lse stays contiguous.
// CHECK-LABEL: func.func @forward_views
// CHECK: fa.attention ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>) outs(%{{.*}} : memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>) lse(%{{.*}} : memref<?x?x?xf32>) causal
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
func.func @forward_views(%q: !t, %k: !t, %v: !t, %o: !t, %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t) lse(%lse : memref<?x?x?xf32>) causal
  return
}

// -----

// Static strides and offsets, views and contiguous tensors mixed.
// CHECK-LABEL: func.func @static_views
// CHECK: fa.attention ins({{.*}} : memref<2x4x100x64xf16, strided<[76800, 64, 768, 1], offset: 128>>, memref<2x4x100x64xf16>, memref<2x4x100x64xf16, strided<[76800, 64, 768, 1], offset: 512>>)
!q = memref<2x4x100x64xf16, strided<[76800, 64, 768, 1], offset: 128>>
!v = memref<2x4x100x64xf16, strided<[76800, 64, 768, 1], offset: 512>>
!c = memref<2x4x100x64xf16>
func.func @static_views(%q: !q, %k: !c, %v: !v, %o: !c) {
  fa.attention ins(%q, %k, %v : !q, !c, !v) outs(%o : !c)
  return
}

// -----

// The backward: every [batch, heads, seq, head_dim] tensor may be a view.
// CHECK-LABEL: func.func @backward_views
// CHECK: fa.attention_grad ins({{.*}}) outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>)
!t = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>
!s = memref<?x?x?xf32>
func.func @backward_views(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}

// -----

// The statistics are contiguous: lse is written one value per row.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
!ls = memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>
func.func @strided_lse(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !ls) {
  // expected-error @+1 {{expects operand #4 to have the identity (contiguous row-major) layout, got 'memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>'}}
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t) lse(%lse : !ls)
  return
}

// -----

// The backward's lse too.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
!ls = memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>
func.func @backward_strided_lse(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !ls, %dq: !t, %dk: !t, %dv: !t) {
  // expected-error @+1 {{expects operand #5 to have the identity (contiguous row-major) layout}}
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !ls) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}

// -----

// A gradient whose head_dim is not contiguous.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
!d = memref<?x?x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>>
!s = memref<?x?x?xf32>
func.func @backward_strided_head_dim(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !d) {
  // expected-error @+1 {{expects operand #8 to have the identity layout or a strided layout with innermost stride 1}}
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !d)
  return
}

// -----

// A non-strided layout (an affine map) is refused as well.
#transposed = affine_map<(b, h, t, d) -> (b, t, h, d)>
!a = memref<2x4x100x64xbf16, #transposed>
!c = memref<2x4x100x64xbf16>
func.func @affine_map_layout(%q: !a, %k: !c, %v: !c, %o: !c) {
  // expected-error @+1 {{expects operand #0 to have the identity layout or a strided layout with innermost stride 1}}
  fa.attention ins(%q, %k, %v : !a, !c, !c) outs(%o : !c)
  return
}

// -----

// LayerNorm keeps requiring contiguous rows.
!r = memref<?x?xbf16, strided<[?, 1], offset: ?>>
!c = memref<?xbf16>
func.func @layernorm_strided(%x: !r, %w: !c, %b: !c, %y: memref<?x?xbf16>, %eps: f32) {
  // expected-error @+1 {{expects operand #0 to have the identity (contiguous row-major) layout}}
  fa.layernorm ins(%x, %w, %b : !r, !c, !c) outs(%y : memref<?x?xbf16>) eps(%eps : f32)
  return
}
