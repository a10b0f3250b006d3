// RUN: fa-opt %s --fa-tile-attention-grad --fa-eliminate-causal-tiles --fa-pipeline-kv-copies --canonicalize --split-input-file | FileCheck %s

// The backward's loops (fa.copy_loop) read their tiles anywhere in the body,
// so they are double-buffered: the Q and dO tiles of the dK/dV loop get two
// slots; the first ones are copied before the loop, each iteration waits
// once, starts the next iteration's tiles into the other slot and computes
// on its own, j % 2. K and V, copied once, become asynchronous too.
// CHECK-LABEL: gpu.func @g_dkdv
// CHECK-SAME: workgroup(%[[KB:[^ ]*]] : memref<64x64xbf16, {{.*}}, %[[VB:[^ ]*]] : memref<64x64xbf16, {{.*}}, %[[QB:[^ ]*]] : memref<2x64x64xbf16, {{.*}}, %[[DOB:[^ ]*]] : memref<2x64x64xbf16,
// CHECK-NOT: fa.stage_tile
// CHECK: fa.copy_tile_async %{{.*}} into %[[KB]]
// CHECK: fa.copy_tile_async %{{.*}} into %[[VB]]
// CHECK: scf.for
// CHECK: memref.subview %[[QB]]
// CHECK: fa.copy_tile_async %arg0
// CHECK: memref.subview %[[DOB]]
// CHECK: fa.copy_tile_async %arg3
// CHECK: scf.for %[[J:[^ ]*]] =
// CHECK-NEXT: fa.wait_tiles
// CHECK: scf.if
// CHECK: fa.copy_tile_async %arg0
// CHECK: fa.copy_tile_async %arg3
// CHECK: }
// CHECK-NEXT: %[[QS:.*]] = arith.remui %[[J]], %c2
// CHECK-NEXT: %[[QSLOT:.*]] = memref.subview %[[QB]][%[[QS]], 0, 0] [1, 64, 64]
// CHECK-NEXT: %[[DS:.*]] = arith.remui %[[J]], %c2
// CHECK-NEXT: %[[DOSLOT:.*]] = memref.subview %[[DOB]][%[[DS]], 0, 0] [1, 64, 64]
// CHECK-NOT: fa.wait_tiles
// CHECK: fa.tile_matmul %[[KB]], %[[QSLOT]], %{{.*}} transpose_b
// CHECK: fa.tile_matmul %[[VB]], %[[DOSLOT]], %{{.*}} transpose_b
// CHECK: fa.tile_matmul %{{.*}}, %[[DOSLOT]], %{{.*}} :
// CHECK: fa.tile_matmul %{{.*}}, %[[QSLOT]], %{{.*}} :
// CHECK-NEXT: scf.yield
// CHECK-NEXT: } {fa.copy_loop, fa.pipelined}
// CHECK-NEXT: fa.wait_tiles
// The dQ kernel's two key loops (before and on the diagonal) share K and V's
// two slots each.
// CHECK-LABEL: gpu.func @g(
// CHECK-SAME: memref<2x64x64xbf16, {{.*}}, %{{.*}} : memref<2x64x64xbf16,
// CHECK-NOT: fa.stage_tile
// CHECK: scf.for
// CHECK-NEXT: fa.wait_tiles
// CHECK: } {fa.copy_loop, fa.kv_tiles = "full", fa.pipelined}
// CHECK-NEXT: fa.wait_tiles
// CHECK: scf.for
// CHECK-NEXT: fa.wait_tiles
// CHECK: fa.apply_mask
// CHECK: } {fa.copy_loop, fa.kv_tiles = "partial", fa.pipelined}
// CHECK-NEXT: fa.wait_tiles
!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
func.func @g(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t) causal
  return
}

// -----

// One stage: a tile read after its next copy could start would be
// overwritten early, so the copies stay synchronous.
// CHECK-LABEL: gpu.func @one_stage_dkdv
// CHECK-NOT: fa.copy_tile_async
// CHECK-NOT: fa.wait_tiles
// CHECK: fa.stage_tile
// CHECK-LABEL: gpu.func @one_stage(
// CHECK-NOT: fa.copy_tile_async
// CHECK: fa.stage_tile
!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
func.func @one_stage(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<num_stages = 1>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}
