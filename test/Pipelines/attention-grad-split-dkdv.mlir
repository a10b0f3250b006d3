// RUN: fa-opt %s --fa-expand-attention-variants --fa-tile-attention-grad=chip=sm_90a --fa-eliminate-causal-tiles | FileCheck %s

// A window's backward at head_dim 256 (sm_90a's default tiles: split_dkdv):
// the tile classifier sees the query loop of each half of the split dK/dV
// kernel (dV for blocks of grid z 0, dK else) and classifies both: their
// tiles carry fa.kv_tiles, the window's mask stays in them, and no loop is
// left marked for the classifier.
// CHECK-LABEL: gpu.func @window_dkdv(
// CHECK: gpu.block_id z
// CHECK: scf.if
// CHECK: fa.mask_tile
// CHECK: fa.tile_matmul {{.*}}, vector<128x256xf32>
// CHECK: } {fa.copy_loop, fa.kv_tiles = "{{[a-z]+}}"}
// CHECK: fa.store_tile
// CHECK: } else {
// CHECK: fa.stage_tile
// CHECK: fa.mask_tile
// CHECK: fa.tile_matmul {{.*}}, vector<128x256xf32>
// CHECK: } {fa.copy_loop, fa.kv_tiles = "{{[a-z]+}}"}
// CHECK: fa.store_tile
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @window(
// CHECK-NOT: fa.kv_loop
!t = memref<?x?x?x256xbf16>
!s = memref<?x?x?xf32>
func.func @window(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t, %left: index, %right: index) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t) window(%left, %right)
  return
}
