// RUN: fa-opt %s --fa-to-ptx --split-input-file --verify-diagnostics
// Mask/score regions, the named variants and sinks have no kernels until the
// tile classifier (issue 20 item 3): fa-to-ptx refuses them at the op,
// through its tiling passes, instead of compiling the plain kernel and
// ignoring them.

!t = memref<?x?x?x64xbf16>
func.func @window(%q: !t, %k: !t, %v: !t, %o: !t, %left: index, %right: index) {
  // expected-error @+1 {{fa-tile-attention: mask/score regions, named variants (window, document, softcap, alibi, causal_bottom_right) and sinks are not compiled yet (issue 20 item 3); only causal is}}
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t) causal window(%left, %right)
  return
}

// -----

!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
func.func @grad_softcap(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t, %cap: f32) {
  // expected-error @+1 {{fa-tile-attention-grad: mask/score regions, named variants}}
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t) softcap(%cap)
  return
}
