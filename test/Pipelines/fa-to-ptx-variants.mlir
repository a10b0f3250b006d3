// RUN: rm -rf %t && fa-opt %s --fa-to-ptx="export-dir=%t" -o /dev/null
// RUN: FileCheck %s --input-file=%t/manifest.json
// RUN: fa-opt %s --fa-expand-attention-variants --fa-tile-attention --fa-tile-attention-grad --fa-fuse-online-softmax --fa-eliminate-causal-tiles | FileCheck %s --check-prefix=TILES
// The named variants compile through fa-to-ptx (which expands them into
// regions first): the manifest records each kernel's variant and its
// values as parameters named for the runtime, the backward's dK/dV and dQ
// kernels take them too, and the classifier restricts each masked loop to
// the tiles the mask keeps something of, evaluating the region only on the
// partial ones (a uniform branch on the tile index).

// CHECK-DAG: "name": "window_fwd"
// CHECK-DAG: "variant": "window"
// CHECK-DAG: "name": "window_left"
// CHECK-DAG: "name": "window_right"
// CHECK-DAG: "kind": "i64"
// CHECK-DAG: "variant": "causal_bottom_right+softcap"
// CHECK-DAG: "name": "softcap_bwd_dkdv"
// CHECK-DAG: "name": "softcap"
// CHECK-DAG: "kind": "f32"

// TILES-LABEL: gpu.func @window_fwd(
// TILES: arith.ceildivsi
// TILES: arith.floordivsi
// TILES: scf.for %[[TILE:.*]] = %[[VISIT_BEGIN:.*]] to %[[VISIT_END:.*]] step
// TILES-DAG: %[[BEFORE:.*]] = arith.cmpi ult, %[[TILE]], %[[FULL_BEGIN:[^ ]*]] : index
// TILES-DAG: %[[AFTER:.*]] = arith.cmpi uge, %[[TILE]], %[[FULL_END:[^ ]*]] : index
// TILES: %[[PARTIAL:.*]] = arith.ori {{.*}} : i1
// TILES: %[[SCORES:.*]] = scf.if %[[PARTIAL]]
// TILES: fa.mask_tile {{.*}} causal
// TILES: } else {
// TILES-NEXT: scf.yield
// TILES: } {fa.kv_tiles = "visited", fa.softmax_phase = #fa<phase online>}
// TILES-NOT: fa.mask_tile
!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
func.func @window_fwd(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !s, %left: index, %right: index) {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t) lse(%lse : !s) causal window(%left, %right)
  return
}

// TILES-LABEL: gpu.func @softcap_bwd_dkdv(
// TILES: fa.score_tile {{.*}} transposed
// TILES: scf.if
// TILES: fa.mask_tile {{.*}} transposed
// TILES: } {fa.copy_loop, fa.kv_tiles = "visited"}
// TILES-NOT: fa.mask_tile
// TILES-LABEL: gpu.func @softcap_bwd(
func.func @softcap_bwd(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t, %cap: f32) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t) causal_bottom_right softcap(%cap)
  return
}
