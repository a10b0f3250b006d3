// RUN: rm -rf %t && fa-opt %s --fa-to-ptx="export-dir=%t" -o /dev/null
// RUN: FileCheck %s --input-file=%t/manifest.json
// Sinks and dropout compile through fa-to-ptx, with named variants beside
// them: the manifest names each kernel's variant ("sinks" and "dropout"
// after the region variants), the forward's sinks and dropout parameters
// (p f32, seed i64, offset i32) and those of both backward kernels that
// recompute P, and the dQ kernel's fourth companion, the row-wise dsinks
// kernel (one block per query head).

// CHECK-DAG: "variant": "window+sinks"
// CHECK-DAG: "variant": "softcap+sinks+dropout"
// CHECK-DAG: "dsinks_kernel": "sinks_bwd_dsinks"
// CHECK-DAG: "op": "attention_bwd_dsinks"
// CHECK-DAG: "grid": [
// CHECK-DAG: "heads"
// CHECK-DAG: "name": "dropout_p"
// CHECK-DAG: "name": "dropout_seed"
// CHECK-DAG: "kind": "i64"
// CHECK-DAG: "name": "dropout_offset"
// CHECK-DAG: "kind": "i32"
// CHECK-DAG: "name": "sinks"
// CHECK-DAG: "name": "dsinks"
// CHECK-DAG: "name": "sinks_bwd_dkdv"
// CHECK-DAG: "name": "dropout_bwd_dkdv"

!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
!h = memref<?xf32>

func.func @sinks_fwd(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !s, %sinks: !h, %left: index, %right: index) {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t) lse(%lse : !s) sinks(%sinks : !h) causal window(%left, %right)
  return
}

func.func @sinks_bwd(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t, %sinks: !h, %dsinks: !h) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t) sinks(%sinks : !h) dsinks(%dsinks : !h) causal
  return
}

func.func @dropout_fwd(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !s, %sinks: !h, %cap: f32, %p: f32, %seed: i64, %offset: i32) {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t) lse(%lse : !s) sinks(%sinks : !h) softcap(%cap) dropout(%p, %seed, %offset)
  return
}

func.func @dropout_bwd(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t, %p: f32, %seed: i64, %offset: i32) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t) causal dropout(%p, %seed, %offset)
  return
}
