// RUN: fa-opt %s --convert-fa-to-nvgpu --canonicalize --cse --split-input-file | FileCheck %s

// Input: tile-level loads, stores and copies in one-warp kernels
// (known_block_size 32; no fa.tile, so one 16-row block per warp) on
// 16 x 16 f16 tiles. Lane l holds rows l/4 and l/4 + 8 of its warp's 16, and
// columns 8n + 2(l % 4) + {0, 1} of every 8-column block n.

// load_tile: each lane loads its pairs (4-byte loads) from global memory,
// rows past the sequence end from a clamped row and zeroed. store_tile:
// each lane stores its pairs, skipping rows past the sequence end.
// CHECK-LABEL: gpu.func @register_tile
// CHECK-SAME: (%[[Q:[^:]*]]: memref<?x?x?x16xf16>, %[[O:[^:]*]]: memref<?x?x?x16xf16>, %[[B:[^:]*]]: index, %[[H:[^:]*]]: index, %[[ROW0:[^:]*]]: index)
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[LANE:.*]] = arith.remui %[[TID]], %c32
// CHECK: %[[QUAD:.*]] = arith.remui %[[LANE]], %c4
// CHECK: %[[LANE_ROW:.*]] = arith.divui %[[LANE]], %c4
// CHECK: %[[WARP_ROW:.*]] = arith.addi %{{.*}}, %[[LANE_ROW]]
// CHECK: %[[COL:.*]] = arith.muli %[[QUAD]], %c2
// CHECK: %[[ROW:.*]] = arith.addi %[[ROW0]], %[[WARP_ROW]]
// CHECK: %[[ROW8:.*]] = arith.addi %[[ROW]], %c8
// CHECK: %[[SEQ:.*]] = memref.dim %[[Q]], %c2
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[ROW]], %[[SEQ]]
// CHECK: %[[CLAMPED:.*]] = arith.minui %[[ROW]]
// CHECK: %[[PAIR:.*]] = vector.load %[[Q]][%[[B]], %[[H]], %[[CLAMPED]], %[[COL]]] {alignment = 4 : i64} : memref<?x?x?x16xf16>, vector<2xf16>
// CHECK: arith.select %[[IN]], %[[PAIR]], %{{.*}} : vector<2xf16>
// CHECK-COUNT-3: vector.load %[[Q]]
// CHECK-NOT: vector.load
// CHECK: %[[OUT_SEQ:.*]] = memref.dim %[[O]], %c2
// CHECK: %[[ROW_IN:.*]] = arith.cmpi ult, %[[ROW]], %[[OUT_SEQ]]
// CHECK: scf.if %[[ROW_IN]] {
// CHECK-COUNT-2: vector.store %{{.*}}, %[[O]][%[[B]], %[[H]], %[[ROW]], %{{.*}}] {alignment = 4 : i64} : memref<?x?x?x16xf16>, vector<2xf16>
// CHECK-NEXT: }
// CHECK: %[[ROW8_IN:.*]] = arith.cmpi ult, %[[ROW8]], %[[OUT_SEQ]]
// CHECK: scf.if %[[ROW8_IN]] {
// CHECK-COUNT-2: vector.store %{{.*}}, %[[O]][%[[B]], %[[H]], %[[ROW8]], %{{.*}}]
// CHECK-NOT: fa.
!t = memref<?x?x?x16xf16>
gpu.module @m {
  gpu.func @register_tile(%q: !t, %o: !t, %b: index, %h: index, %row0: index) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %t = fa.load_tile %q[%b, %h, %row0] : !t -> vector<16x16xf16>
    fa.store_tile %t, %o[%b, %h, %row0] : vector<16x16xf16>, !t
    gpu.return
  }
}

// -----

// stage_tile: the whole block copies 16-byte chunks between two barriers.
// Thread t copies chunk t % 2 of row t / 2 (clamped and zeroed past the
// sequence end) to chunk column (t % 2) xor (row % 8) of the shared tile.
// CHECK-LABEL: gpu.func @stage_tile
// CHECK-SAME: (%[[K:[^:]*]]: memref<?x?x?x16xf16>, %[[B:[^:]*]]: index, %[[H:[^:]*]]: index, %[[ROW0:[^:]*]]: index)
// CHECK-SAME: workgroup(%[[KB:[^ ]+]] :
// CHECK: gpu.barrier
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[ROW:.*]] = arith.divui %[[TID]], %c2
// CHECK: %[[CHUNK:.*]] = arith.remui %[[TID]], %c2
// CHECK: %[[ROW_MOD_8:.*]] = arith.remui %[[ROW]], %c8
// CHECK: %[[SWIZZLED:.*]] = arith.xori %[[CHUNK]], %[[ROW_MOD_8]]
// CHECK: %[[DEST_COL:.*]] = arith.muli %[[SWIZZLED]], %c8
// CHECK: %[[SRC_COL:.*]] = arith.muli %[[CHUNK]], %c8
// CHECK: %[[SRC_ROW:.*]] = arith.addi %[[ROW0]], %[[ROW]]
// CHECK: %[[SEQ:.*]] = memref.dim %[[K]], %c2
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[SRC_ROW]], %[[SEQ]]
// CHECK: %[[CLAMPED:.*]] = arith.minui %[[SRC_ROW]]
// CHECK: %[[VALUE:.*]] = vector.load %[[K]][%[[B]], %[[H]], %[[CLAMPED]], %[[SRC_COL]]] {alignment = 16 : i64} : memref<?x?x?x16xf16>, vector<8xf16>
// CHECK: %[[ZEROED:.*]] = arith.select %[[IN]], %[[VALUE]]
// CHECK: vector.store %[[ZEROED]], %[[KB]][%[[ROW]], %[[DEST_COL]]]
// CHECK-NEXT: gpu.barrier
!t = memref<?x?x?x16xf16>
!smem = memref<16x16xf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @stage_tile(%k: !t, %b: index, %h: index, %row0: index) workgroup(%kb : !smem) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    fa.stage_tile %k[%b, %h, %row0] into %kb : !t, !smem
    gpu.return
  }
}

// -----

// copy_tile_async: the same chunks as cp.async, with no barrier; past the
// sequence end the source size is 0 (zero fill) from a clamped address. One
// commit group per copy. wait_tiles: this thread's groups, then a barrier.
// CHECK-LABEL: gpu.func @copy_tile_async
// CHECK-SAME: (%[[K:[^:]*]]: memref<?x?x?x16xf16>, %[[B:[^:]*]]: index, %[[H:[^:]*]]: index, %[[ROW0:[^:]*]]: index)
// CHECK-NOT: gpu.barrier
// CHECK: %[[SRC_ROW:.*]] = arith.addi %[[ROW0]], %{{.*}}
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[SRC_ROW]], %{{.*}}
// CHECK: %[[SRC_ELEMENTS:.*]] = arith.select %[[IN]], %c8, %c0 : index
// CHECK: %[[CLAMPED:.*]] = arith.minui %[[SRC_ROW]]
// CHECK: nvgpu.device_async_copy %[[K]][%[[B]], %[[H]], %[[CLAMPED]], %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}], 8, %[[SRC_ELEMENTS]] {bypassL1}
// CHECK-NEXT: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: gpu.return
!t = memref<?x?x?x16xf16>
!smem = memref<16x16xf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @copy_tile_async(%k: !t, %b: index, %h: index, %row0: index) workgroup(%kb : !smem) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    fa.copy_tile_async %k[%b, %h, %row0] into %kb : !t, !smem
    fa.wait_tiles
    gpu.return
  }
}

// -----

// store_tile through a shared tile (stage_output): between two barriers
// each lane stores its pairs into the swizzled staging tile; then each
// thread loads one 16-byte chunk of it and stores it to its row, if that
// row exists.
// CHECK-LABEL: gpu.func @staged_store
// CHECK-SAME: (%[[O:[^:]*]]: memref<?x?x?x16xf16>, %[[B:[^:]*]]: index, %[[H:[^:]*]]: index, %[[ROW0:[^:]*]]: index)
// CHECK-SAME: workgroup(%[[OB:[^ ]+]] :
// CHECK: gpu.barrier
// CHECK-COUNT-4: vector.store %{{.*}}, %[[OB]][%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<16x16xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// CHECK-NEXT: gpu.barrier
// CHECK: %[[SEQ:.*]] = memref.dim %[[O]], %c2
// CHECK: %[[ROW:.*]] = arith.addi %[[ROW0]], %{{.*}}
// CHECK: %[[CHUNK:.*]] = vector.load %[[OB]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<16x16xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[ROW]], %[[SEQ]]
// CHECK: scf.if %[[IN]] {
// CHECK-NEXT: vector.store %[[CHUNK]], %[[O]][%[[B]], %[[H]], %[[ROW]], %{{.*}}] {alignment = 16 : i64} : memref<?x?x?x16xf16>, vector<8xf16>
!t = memref<?x?x?x16xf16>
!smem = memref<16x16xf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @staged_store(%o: !t, %b: index, %h: index, %row0: index) workgroup(%ob : !smem) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %t = arith.constant dense<1.0> : vector<16x16xf16>
    fa.store_tile %t, %o[%b, %h, %row0] through %ob : !smem : vector<16x16xf16>, !t
    gpu.return
  }
}

// -----

// store_rows: the first lane of each row (l % 4 == 0) stores its two rows'
// values, rows past the sequence end skipped.
// CHECK-LABEL: gpu.func @store_rows
// CHECK-SAME: (%[[LSE:[^:]*]]: memref<?x?x?xf32>, %[[B:[^:]*]]: index, %[[H:[^:]*]]: index, %[[ROW0:[^:]*]]: index)
// CHECK: %[[SEQ:.*]] = memref.dim %[[LSE]], %c2
// CHECK: %[[QUAD:.*]] = arith.remui %{{.*}}, %c4
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[QUAD]], %c0
// CHECK: %[[ROW:.*]] = arith.addi %[[ROW0]], %{{.*}}
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[ROW]], %[[SEQ]]
// CHECK: %[[STORES:.*]] = arith.andi %[[FIRST]], %[[IN]]
// CHECK: scf.if %[[STORES]] {
// CHECK-NEXT: memref.store %{{.*}}, %[[LSE]][%[[B]], %[[H]], %[[ROW]]]
// CHECK: %[[ROW8:.*]] = arith.addi %[[ROW]], %c8
// CHECK: %[[IN8:.*]] = arith.cmpi ult, %[[ROW8]], %[[SEQ]]
// CHECK: %[[STORES8:.*]] = arith.andi %[[FIRST]], %[[IN8]]
// CHECK: scf.if %[[STORES8]] {
// CHECK-NEXT: memref.store %{{.*}}, %[[LSE]][%[[B]], %[[H]], %[[ROW8]]]
gpu.module @m {
  gpu.func @store_rows(%lse: memref<?x?x?xf32>, %b: index, %h: index, %row0: index) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %r = arith.constant dense<1.0> : vector<16xf32>
    fa.store_rows %r, %lse[%b, %h, %row0] : vector<16xf32>, memref<?x?x?xf32>
    gpu.return
  }
}

// -----

// Row-wise kernels (fa.rows) are left to convert-fa-rows-to-gpu.
// CHECK-LABEL: gpu.func @rows_kernel
// CHECK-NEXT: fa.load_block
// CHECK-NEXT: fa.store_block
gpu.module @m {
  gpu.func @rows_kernel(%x: memref<?x?xf32>, %y: memref<?x?xf32>, %row: index, %col: index) kernel attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024>, known_block_size = array<i32: 128, 1, 1>} {
    %b = fa.load_block %x[%row, %col] : memref<?x?xf32> -> vector<1x1024xf32>
    fa.store_block %b, %y[%row, %col] : vector<1x1024xf32>, memref<?x?xf32>
    gpu.return
  }
}
