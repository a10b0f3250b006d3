// RUN: fa-opt %s --fa-tile-attention-grad=fuse-dq=1 --split-input-file | FileCheck %s

// head_dim 128 on two warpgroups of wgmma: the dK/dV kernel computes dQ too.
// Per query tile it takes dV += P^T dO with P^T from registers, stores dS to
// shared memory (transposed: block_n x block_m; two slots taken in turn by
// the iterations of the head and tile loops, h * tiles + j, so the store
// needs no leading barrier), reads it back for dK += dS^T Q and
// dQ^T = K^T dS^T, waits for
// the key blocks before it on the tile's counter, adds (block 0 stores) and
// signals; the attention_bwd kernel only scales and converts.
!t = memref<?x?x?x128xbf16>
!s = memref<?x?x?xf32>
// CHECK: fa.kernels = {
// CHECK-SAME: full = #fa.kernel<op = attention_bwd, {{.*}}params = [#fa.param<"dq_accum" : memref<?x?x?x128xf32>>, #fa.param<"dq" : memref<?x?x?x128xbf16>>]
// CHECK-SAME: full_dkdv = #fa.kernel<op = attention_bwd_dkdv, {{.*}}params = [{{.*}}#fa.param<"dk" : {{[^>]*}}>>, #fa.param<"dv" : {{[^>]*}}>>, #fa.param<"dq_accum" : memref<?x?x?x128xf32>>, #fa.param<"dq_semaphores" : memref<?x?x?xi32>>]
// CHECK: gpu.func @full_dkdv(
// CHECK-SAME: %[[ACC:[^:]*]]: memref<?x?x?x128xf32>, %[[SEM:[^:]*]]: memref<?x?x?xi32>)
// CHECK-SAME: workgroup(%[[KEY:[^ ]*]] : memref<128x128xbf16, {{.*}} %[[DS:[^ ]*]] : memref<2x32x128xbf16, #gpu.address_space<workgroup>> {llvm.align = 1024 : i64})
// CHECK: %[[KB:.*]] = gpu.block_id x
// CHECK: %[[TILES:.*]] = arith.subi %{{.*}}, %c0
// CHECK: scf.for %[[H:[^ ]*]] =
// CHECK: scf.for %[[J:[^ ]*]] = %c0
// P^T stays in registers: dV's A is the probabilities' vector.
// CHECK-NOT: fa.store_tile_shared
// CHECK: fa.tile_matmul %{{.*}}, %{{.*}}, %{{.*}} : vector<128x32xbf16>, memref<32x128xbf16, {{.*}}>, vector<128x128xf32>
// CHECK: %[[HTILES:.*]] = arith.muli %[[H]], %[[TILES]]
// CHECK: %[[NTH:.*]] = arith.addi %[[HTILES]], %[[J]]
// CHECK: %[[SLOT:.*]] = arith.remui %[[NTH]], %c2
// CHECK: %[[DSS:.*]] = memref.subview %[[DS]][%[[SLOT]], 0, 0] [1, 32, 128] [1, 1, 1]
// CHECK: fa.store_tile_shared %{{.*}}, %[[DSS]] transposed no_leading_barrier : vector<128x32xbf16>, memref<32x128xbf16, strided<[128, 1], offset: ?>
// CHECK: fa.tile_matmul %[[DSS]], %{{.*}}, %{{.*}} transpose_a : memref<32x128xbf16, {{.*}}>, memref<32x128xbf16, {{.*}}>, vector<128x128xf32>
// CHECK: %[[DQT:.*]] = fa.tile_matmul %[[KEY]], %[[DSS]], %{{.*}} transpose_a transpose_b : memref<128x128xbf16, {{.*}}>, memref<32x128xbf16, {{.*}}>, vector<128x32xf32>
// CHECK: fa.ordered_wait %[[SEM]][%{{.*}}, %{{.*}}, %[[J]]] equals %[[KB]]
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[KB]], %c0
// CHECK: fa.accumulate_tile %[[DQT]], %[[ACC]][%{{.*}}] transposed overwrite(%[[FIRST]]) : vector<128x32xf32>, memref<?x?x?x128xf32>
// CHECK: fa.ordered_signal %[[SEM]][%{{.*}}, %{{.*}}, %[[J]]]
// CHECK: gpu.func @full(%[[SUMS:[^:]*]]: memref<?x?x?x128xf32>, %[[DQ:[^:]*]]: memref<?x?x?x128xbf16>)
// CHECK: fa.load_tile %[[SUMS]]{{.*}} -> vector<64x128xf32>
// CHECK: arith.mulf
// CHECK: arith.truncf
// CHECK: fa.store_tile %{{.*}}, %[[DQ]]
func.func @full(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}

// -----

// Causal: key block kb (the grid's x backwards: nkb - 1 - x, so that a
// block only waits for blocks launched before it) visits the query tiles
// from its diagonal on, in order; tile j's turns go from the last block that
// visits it, last(j) = ((j + 1) * 32 - 1) / 128 (at most nkb - 1), down:
// kb's turn is last(j) - kb.
!t = memref<?x?x?x128xbf16>
!s = memref<?x?x?xf32>
// CHECK: gpu.func @causal_dkdv(
// CHECK: %[[X:.*]] = gpu.block_id x
// CHECK: %[[NKB:.*]] = gpu.grid_dim x
// CHECK: %[[LASTKB:.*]] = arith.subi %[[NKB]], %c1
// CHECK: %[[KB:.*]] = arith.subi %[[LASTKB]], %[[X]]
// CHECK: %[[KEY0:.*]] = arith.muli %[[KB]], %c128
// CHECK: %[[FIRSTTILE:.*]] = arith.divui %[[KEY0]], %c32
// CHECK: scf.for %[[J:[^ ]*]] = %[[FIRSTTILE]] to %{{[^ ]*}}
// CHECK: %[[NEXT:.*]] = arith.addi %[[J]], %c1
// CHECK: %[[END:.*]] = arith.muli %[[NEXT]], %c32
// CHECK: %[[ENDM1:.*]] = arith.subi %[[END]], %c1
// CHECK: %[[VISITOR:.*]] = arith.divui %[[ENDM1]], %c128
// CHECK: %[[LAST:.*]] = arith.minui %[[VISITOR]], %{{.*}}
// CHECK: %[[TURN:.*]] = arith.subi %[[LAST]], %[[KB]]
// CHECK: fa.ordered_wait %{{.*}}[%{{.*}}, %{{.*}}, %[[J]]] equals %[[TURN]]
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[TURN]], %c0
// CHECK: fa.accumulate_tile %{{.*}} transposed overwrite(%[[FIRST]])
// CHECK: fa.ordered_signal %{{.*}}[%{{.*}}, %{{.*}}, %[[J]]]
func.func @causal(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t) causal
  return
}

// -----

// head_dim 64 (dQ^T would have 64 rows for two warpgroups) and a mask
// region (no fixed order of the key blocks) keep the separate dQ kernel.
!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
// CHECK: fa.kernels = {
// CHECK-NOT: dq_accum
// CHECK: gpu.func @d64_dkdv(
// CHECK-NOT: fa.ordered_wait
// CHECK: gpu.func @d64(
// CHECK: fa.tile_matmul
func.func @d64(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}

// -----

!t = memref<?x?x?x128xbf16>
!s = memref<?x?x?xf32>
// CHECK: fa.kernels = {
// CHECK-NOT: dq_accum
// CHECK: gpu.func @masked_dkdv(
// CHECK-NOT: fa.ordered_wait
// CHECK: gpu.func @masked(
// CHECK: fa.mask_tile
func.func @masked(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t) mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %keep = arith.cmpi sle, %j, %i : index
    fa.yield %keep : i1
  }
  return
}
