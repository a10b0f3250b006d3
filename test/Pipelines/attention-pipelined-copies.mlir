// RUN: fa-opt %s --fa-tile-attention --fa-fuse-online-softmax --fa-eliminate-causal-tiles --fa-pipeline-kv-copies --canonicalize --split-input-file | FileCheck %s

// Each key loop: K's first tile copied before it; inside, wait, start V[j],
// scores; wait, start K[j+1] (if any), P @ V; after it, a final wait. No
// synchronous copy is left.
// CHECK-LABEL: gpu.func @attn
// CHECK-NOT: fa.stage_tile
// CHECK: fa.copy_tile_async %[[K:arg[0-9]+]][%{{.*}}, %{{.*}}, %c0] into %[[KB:arg[0-9]+]]
// CHECK: scf.for %[[J:.*]] = %c0 to %[[FULL:[0-9]+]] step %c1
// CHECK-NEXT: fa.wait_tiles
// CHECK-NEXT: %[[COL:.*]] = arith.muli %[[J]], %c64
// CHECK-NEXT: fa.copy_tile_async %[[V:arg[0-9]+]][%{{.*}}, %{{.*}}, %[[COL]]] into %[[VB:arg[0-9]+]]
// CHECK-NEXT: fa.tile_matmul %{{.*}}, %[[KB]], %{{.*}} transpose_b
// CHECK: fa.wait_tiles
// CHECK-NEXT: %[[NEXT:.*]] = arith.addi %[[J]], %c1
// CHECK-NEXT: %[[HAS:.*]] = arith.cmpi ult, %[[NEXT]], %[[FULL]]
// CHECK-NEXT: scf.if %[[HAS]] {
// CHECK-NEXT:   %[[NCOL:.*]] = arith.muli %[[NEXT]], %c64
// CHECK-NEXT:   fa.copy_tile_async %[[K]][%{{.*}}, %{{.*}}, %[[NCOL]]] into %[[KB]]
// CHECK-NEXT: }
// CHECK-NEXT: fa.tile_matmul %{{.*}}, %[[VB]], %{{.*}} :
// CHECK: } {fa.kv_tiles = "full", fa.pipelined, fa.softmax_phase = #fa<phase online>}
// CHECK-NEXT: fa.wait_tiles
// The partial (diagonal) loop gets the same treatment.
// CHECK: fa.copy_tile_async %[[K]]
// CHECK: scf.for
// CHECK: fa.apply_mask
// CHECK: } {fa.kv_tiles = "partial", fa.pipelined, fa.softmax_phase = #fa<phase online>}
// CHECK-NEXT: fa.wait_tiles
func.func @attn(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                %o: memref<?x?x?x64xbf16>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>) causal
  return
}

// -----

// A kernel whose tile configuration turns pipelining off keeps its copies.
// CHECK-LABEL: gpu.func @off
// CHECK-NOT: fa.copy_tile_async
// CHECK: fa.stage_tile
func.func @off(%q: memref<?x?x?x64xf32>, %k: memref<?x?x?x64xf32>, %v: memref<?x?x?x64xf32>,
               %o: memref<?x?x?x64xf32>) attributes {fa.tile = #fa.tile<block_n = 16, pipeline_copies = false>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xf32>, memref<?x?x?x64xf32>, memref<?x?x?x64xf32>)
               outs(%o : memref<?x?x?x64xf32>)
  return
}

// -----

// num_stages = 2: K and V get two slots each ([2][64][64]). Both tiles of
// the first iteration are copied before the loop; each iteration waits once,
// starts both tiles of the next iteration into the other slot, and reads its
// own slot, j % 2.
// CHECK-LABEL: gpu.func @double_buffered
// CHECK-SAME: workgroup(%[[KB:.*]] : memref<2x64x64xbf16, #gpu.address_space<workgroup>> {llvm.align = 128 : i64}, %[[VB:.*]] : memref<2x64x64xbf16, #gpu.address_space<workgroup>> {llvm.align = 128 : i64})
// CHECK: fa.copy_tile_async %[[K:arg[0-9]+]][%{{.*}}, %{{.*}}, %c0] into
// CHECK: fa.copy_tile_async %[[V:arg[0-9]+]][%{{.*}}, %{{.*}}, %c0] into
// CHECK: scf.for %[[J:.*]] = %c0 to
// CHECK-NEXT: fa.wait_tiles
// CHECK: scf.if
// CHECK: %[[NK:.*]] = memref.subview %[[KB]]
// CHECK: fa.copy_tile_async %[[K]][%{{.*}}] into %[[NK]]
// CHECK: %[[NV:.*]] = memref.subview %[[VB]]
// CHECK: fa.copy_tile_async %[[V]][%{{.*}}] into %[[NV]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[KS:.*]] = arith.remui %[[J]], %c2
// CHECK-NEXT: %[[KSLOT:.*]] = memref.subview %[[KB]][%[[KS]], 0, 0] [1, 64, 64] [1, 1, 1]
// CHECK-NEXT: %[[VS:.*]] = arith.remui %[[J]], %c2
// CHECK-NEXT: %[[VSLOT:.*]] = memref.subview %[[VB]][%[[VS]], 0, 0] [1, 64, 64] [1, 1, 1]
// CHECK-NEXT: fa.tile_matmul %{{.*}}, %[[KSLOT]], %{{.*}} transpose_b
// CHECK-NOT: fa.wait_tiles
// CHECK: fa.tile_matmul %{{.*}}, %[[VSLOT]], %{{.*}} :
// CHECK-NEXT: scf.yield
// CHECK-NEXT: } {fa.kv_tiles = "full", fa.pipelined, fa.softmax_phase = #fa<phase online>}
// CHECK-NEXT: fa.wait_tiles
func.func @double_buffered(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                           %o: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 64, block_n = 64, num_warps = 4, num_stages = 2>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>)
  return
}

// -----

// The query tile in shared memory (q_in_shared) is copied asynchronously too,
// before the first K/V tiles; the loop's first wait covers it.
// CHECK-LABEL: gpu.func @query_in_shared
// CHECK-SAME: %[[QB:arg[0-9]+]] : memref<128x64xbf16, #gpu.address_space<workgroup>>
// CHECK-NOT: fa.stage_tile
// CHECK: fa.copy_tile_async %arg0[%{{.*}}] into %[[QB]]
// CHECK-NOT: fa.wait_tiles
// CHECK: scf.for
// CHECK-NEXT: fa.wait_tiles
// CHECK: fa.tile_matmul %[[QB]]
func.func @query_in_shared(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                           %o: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 4, num_stages = 2, q_in_shared = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>)
  return
}
