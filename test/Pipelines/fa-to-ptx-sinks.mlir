// RUN: fa-opt %s --fa-to-ptx --split-input-file --verify-diagnostics
// Sinks have no kernels yet: fa-to-ptx refuses them at the op, through its
// tiling passes, instead of compiling the kernel without them.

!t = memref<?x?x?x64xbf16>
func.func @sinks(%q: !t, %k: !t, %v: !t, %o: !t, %sinks: memref<?xf32>) {
  // expected-error @+1 {{fa-tile-attention: sinks are not compiled yet (issue 20)}}
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t) sinks(%sinks : memref<?xf32>)
  return
}
