// RUN: fa-opt %s --fa-tile-attention --fa-fuse-online-softmax --fa-eliminate-causal-tiles --fa-overlap-softmax --fa-pipeline-kv-copies --canonicalize --split-input-file | FileCheck %s

// Prologue (there are key tiles): K[0]; wait; K[1] if any, V[0]; the scores
// of tile 0 and their softmax, yielding the rescaled accumulator and P
// without P @ V. The loop starts at tile 1 and carries P: wait; K[j+1] if
// any, V[j]; the scores of K[j] (slot j % 2), then P @ V[j-1] (slot
// (j-1) % 2) on the carried P and accumulator, whose result only the
// rescale reads; it yields the next P. Epilogue: wait, P @ V of the last
// tile. No synchronous copy is left.
// CHECK-LABEL: gpu.func @attn
// CHECK-SAME: workgroup(%[[KB:.*]] : memref<2x128x64xbf16, #gpu.address_space<workgroup>> {llvm.align = 1024 : i64}, %[[VB:.*]] : memref<2x128x64xbf16, #gpu.address_space<workgroup>> {llvm.align = 1024 : i64}, %[[QB:.*]] : memref<128x64xbf16
// CHECK-NOT: fa.stage_tile
// CHECK: fa.copy_tile_async %{{.*}} into %[[QB]]
// CHECK: %[[TILES:.*]] = arith.minui
// CHECK: %[[HAS:.*]] = arith.cmpi ugt, %[[TILES]], %c0
// CHECK: %[[FIRST:.*]]:4 = scf.if %[[HAS]] -> (vector<128xf32>, vector<128xf32>, vector<128x64xf32>, vector<128x128xbf16>) {
// CHECK:   fa.copy_tile_async %[[K:arg[0-9]+]][%{{.*}}, %{{.*}}, %c0] into
// CHECK-NEXT: fa.wait_tiles
// CHECK:   scf.if
// CHECK-NEXT: memref.subview %[[KB]][1, 0, 0]
// CHECK:     fa.copy_tile_async %[[K]][%{{.*}}, %{{.*}}, %c128]
// CHECK:   fa.copy_tile_async %[[V:arg[0-9]+]][%{{.*}}, %{{.*}}, %c0] into
// CHECK:   fa.tile_matmul %[[QB]], %{{.*}} transpose_b
// CHECK-NOT: fa.tile_matmul
// CHECK:   %[[P0:.*]] = arith.truncf
// CHECK-NEXT: scf.yield %{{.*}}, %{{.*}}, %{{.*}}, %[[P0]]
// CHECK: } else {
// CHECK-NEXT: scf.yield %{{.*}}, %{{.*}}, %{{.*}}, %cst{{.*}} : vector<128xf32>, vector<128xf32>, vector<128x64xf32>, vector<128x128xbf16>
// CHECK: %[[LOOP:.*]]:4 = scf.for %[[J:.*]] = %c1 to %[[TILES]] step %c1 iter_args(%{{.*}} = %[[FIRST]]#0, %{{.*}} = %[[FIRST]]#1, %[[ACC:.*]] = %[[FIRST]]#2, %[[P:.*]] = %[[FIRST]]#3)
// CHECK-NEXT: fa.wait_tiles
// CHECK-NEXT: %[[NEXT:.*]] = arith.addi %[[J]], %c1
// CHECK-NEXT: %[[HASNEXT:.*]] = arith.cmpi ult, %[[NEXT]], %[[TILES]]
// CHECK-NEXT: scf.if %[[HASNEXT]] {
// CHECK:        fa.copy_tile_async %[[K]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[SLOT:.*]] = arith.remui %[[J]], %c2
// CHECK-NEXT: %[[VSLOT:.*]] = memref.subview %[[VB]][%[[SLOT]], 0, 0]
// CHECK-NEXT: %[[COL:.*]] = arith.muli %[[J]], %c128
// CHECK-NEXT: fa.copy_tile_async %[[V]][%{{.*}}, %{{.*}}, %[[COL]]] into %[[VSLOT]]
// CHECK-NEXT: %[[KS:.*]] = arith.remui %[[J]], %c2
// CHECK-NEXT: %[[KSLOT:.*]] = memref.subview %[[KB]][%[[KS]], 0, 0]
// CHECK-NEXT: %[[S:.*]] = fa.tile_matmul %[[QB]], %[[KSLOT]], %{{.*}} transpose_b
// CHECK-NEXT: %[[PREV:.*]] = arith.subi %[[J]], %c1
// CHECK-NEXT: %[[PREVSLOT:.*]] = arith.remui %[[PREV]], %c2
// CHECK-NEXT: %[[PREVV:.*]] = memref.subview %[[VB]][%[[PREVSLOT]], 0, 0]
// CHECK-NEXT: %[[PV:.*]] = fa.tile_matmul %[[P]], %[[PREVV]], %[[ACC]] :
// CHECK-NEXT: vector.multi_reduction <maxnumf>, %[[S]]
// CHECK:      math.exp2
// CHECK:      %[[SCALED:.*]] = arith.mulf %[[PV]], %{{.*}} : vector<128x64xf32>
// CHECK-NEXT: %[[PNEXT:.*]] = arith.truncf
// CHECK-NEXT: scf.yield %{{.*}}, %{{.*}}, %[[SCALED]], %[[PNEXT]]
// CHECK-NEXT: } {fa.kv_tiles = "full", fa.pipelined, fa.softmax_phase = #fa<phase online>}
// CHECK-NEXT: %[[OUT:.*]] = scf.if %[[HAS]] -> (vector<128x64xf32>) {
// CHECK-NEXT:   fa.wait_tiles
// CHECK-NEXT:   %[[LAST:.*]] = arith.subi %[[TILES]], %c1
// CHECK-NEXT:   %[[LASTSLOT:.*]] = arith.remui %[[LAST]], %c2
// CHECK-NEXT:   %[[LASTV:.*]] = memref.subview %[[VB]][%[[LASTSLOT]], 0, 0]
// CHECK-NEXT:   %[[FINAL:.*]] = fa.tile_matmul %[[LOOP]]#3, %[[LASTV]], %[[LOOP]]#2 :
// CHECK-NEXT:   scf.yield %[[FINAL]]
// CHECK-NEXT: } else {
// CHECK-NEXT:   scf.yield %[[LOOP]]#2
// CHECK-NEXT: }
func.func @attn(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                %o: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, num_stages = 2, q_in_shared = true, wgmma = true, overlap_softmax = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>)
  return
}

// -----

// Causal: the full and the diagonal loops each get a prologue, the carried
// P and an epilogue; the diagonal one's mask stays on its scores, after
// P @ V is issued.
// CHECK-LABEL: gpu.func @causal
// CHECK: scf.if %{{.*}} -> ({{.*}}vector<128x64xbf16>)
// CHECK: scf.for {{.*}} -> ({{.*}}vector<128x64xbf16>)
// CHECK: } {fa.kv_tiles = "full", fa.pipelined, fa.softmax_phase = #fa<phase online>}
// CHECK: scf.if %{{.*}} -> (vector<128x64xf32>)
// CHECK: scf.if %{{.*}} -> ({{.*}}vector<128x64xbf16>)
// CHECK: fa.apply_mask
// CHECK: scf.for {{.*}} -> ({{.*}}vector<128x64xbf16>)
// CHECK: %[[S:.*]] = fa.tile_matmul {{.*}} transpose_b
// CHECK-NEXT: arith.subi
// CHECK-NEXT: arith.remui
// CHECK-NEXT: memref.subview
// CHECK-NEXT: fa.tile_matmul
// CHECK-NEXT: fa.apply_mask %[[S]]
// CHECK: } {fa.kv_tiles = "partial", fa.pipelined, fa.softmax_phase = #fa<phase online>}
// CHECK: scf.if %{{.*}} -> (vector<128x64xf32>)
// CHECK: fa.store_tile
func.func @causal(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                  %o: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, num_stages = 2, q_in_shared = true, wgmma = true, overlap_softmax = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>) causal
  return
}

// -----

// Without overlap_softmax the loop is fa-pipeline-kv-copies' (P @ V in the
// iteration of its scores, nothing carried besides m, l and acc).
// CHECK-LABEL: gpu.func @plain
// CHECK: scf.for {{.*}} -> (vector<128xf32>, vector<128xf32>, vector<128x64xf32>)
// CHECK: } {fa.kv_tiles = "full", fa.pipelined, fa.softmax_phase = #fa<phase online>}
func.func @plain(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                 %o: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, num_stages = 2, q_in_shared = true, wgmma = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>)
  return
}
