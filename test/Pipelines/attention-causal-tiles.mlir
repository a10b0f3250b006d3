// RUN: fa-opt %s --fa-tile-attention --fa-fuse-online-softmax --fa-eliminate-causal-tiles --canonicalize --split-input-file | FileCheck %s
// RUN: fa-opt %s --fa-tile-attention-grad --fa-eliminate-causal-tiles --canonicalize --split-input-file | FileCheck %s --check-prefix=GRAD

// Causal: full tiles end at min(kv_len / 64, (row0 + 1) / 64); visited tiles
// end at the diagonal, min(tiles, ceil((row0 + 64) / 64)). The first loop has
// no mask at all, the second keeps it; nothing past the diagonal is visited.
// CHECK-LABEL: gpu.func @causal
// CHECK: %[[ROW0:.*]] = arith.muli %{{.*}}, %c64
// CHECK: %[[NT:.*]] = arith.ceildivui %[[KVLEN:.*]], %c64
// CHECK: %[[TAILFULL:.*]] = arith.divui %[[KVLEN]], %c64
// CHECK: %[[ROW1:.*]] = arith.addi %[[ROW0]], %c1
// CHECK: %[[DIAGFULL:.*]] = arith.divui %[[ROW1]], %c64
// CHECK: %[[FULL0:.*]] = arith.minui %[[TAILFULL]], %[[DIAGFULL]]
// CHECK: %[[LAST:.*]] = arith.addi %[[ROW0]], %c64
// CHECK: %[[DIAG:.*]] = arith.ceildivui %[[LAST]], %c64
// CHECK: %[[VISIT:.*]] = arith.minui %[[NT]], %[[DIAG]]
// CHECK: %[[FULL:.*]] = arith.minui %[[FULL0]], %[[VISIT]]
// CHECK: %[[A:.*]]:3 = scf.for %{{.*}} = %c0 to %[[FULL]] step %c1
// CHECK-NOT: fa.apply_mask
// CHECK: } {fa.kv_tiles = "full", fa.softmax_phase = #fa<phase online>}
// CHECK: scf.for %{{.*}} = %[[FULL]] to %[[VISIT]] step %c1 iter_args(%{{.*}} = %[[A]]#0, %{{.*}} = %[[A]]#1, %{{.*}} = %[[A]]#2)
// CHECK: fa.apply_mask {{.*}} causal
// CHECK: } {fa.kv_tiles = "partial", fa.softmax_phase = #fa<phase online>}
// CHECK-NOT: scf.for
func.func @causal(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                  %o: memref<?x?x?x64xbf16>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>) causal
  return
}

// -----

// Not causal: only the sequence tail needs the mask.
// CHECK-LABEL: gpu.func @tail
// CHECK: %[[NT:.*]] = arith.ceildivui %[[KVLEN:.*]], %c64
// CHECK: %[[FULL0:.*]] = arith.divui %[[KVLEN]], %c64
// CHECK: %[[FULL:.*]] = arith.minui %[[FULL0]], %[[NT]]
// CHECK: scf.for %{{.*}} = %c0 to %[[FULL]] step %c1
// CHECK-NOT: fa.apply_mask
// CHECK: } {fa.kv_tiles = "full"
// CHECK: scf.for %{{.*}} = %[[FULL]] to %[[NT]] step %c1
// CHECK: fa.apply_mask
// CHECK-NOT: causal
// CHECK: } {fa.kv_tiles = "partial"
func.func @tail(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                %o: memref<?x?x?x64xbf16>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>)
  return
}

// -----

// The backward's dQ loop has the forward's form, so it splits the same way:
// key tiles before the diagonal without a mask, the diagonal with it.
// GRAD-LABEL: gpu.func @grad(
// GRAD: scf.for %{{.*}} = %c0 to %[[FULL:.*]] step %c1
// GRAD-NOT: fa.apply_mask
// GRAD: } {fa.copy_loop, fa.kv_tiles = "full"}
// GRAD: scf.for %{{.*}} = %[[FULL]] to %{{.*}} step %c1
// GRAD: fa.apply_mask {{.*}} causal :
// GRAD: } {fa.copy_loop, fa.kv_tiles = "partial"}
!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
func.func @grad(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t) causal
  return
}
