// RUN: fa-opt %s --convert-fa-to-nvgpu --canonicalize --cse --split-input-file | FileCheck %s

// fa.store_tile_shared: between two barriers each lane writes its values
// where fa.stage_tile would have put them; in wgmma kernels an async-proxy
// fence comes before the second barrier. The wgmma cases are the fused dQ
// product's: 8 warps (2 warpgroups, 128 rows, one 16-row block per warp),
// bf16 dS^T tiles. Lane l of warp w holds elements (i, j) with
// i = 16w + l/4 (+ 8), j = 2(l % 4) (+ 1, + 8n).

// Transposed into a 32 x 128 tile (256-byte rows: two 128-byte panels, as
// wgmma.mlir's @panels stages them): element (i, j) is row j, column i of
// dest, so it lands in chunk i / 8 of row j, the chunk swizzled by j % 8,
// at panel row (i / 64) x 32 + j, i.e. memref row (panel row) / 2 and chunk
// 8 x ((panel row) % 2) + swizzled, element i % 8 of it: the arithmetic
// fa.stage_tile applies to chunk i / 8 of row j (sharedChunkPosition). One
// 2-byte store per element: 16 per lane.
// CHECK-LABEL: gpu.func @transposed_32
// CHECK-SAME: workgroup(%[[BUF:[^ ]+]] :
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[LANE:.*]] = arith.remui %[[TID]], %c32
// CHECK: %[[WARP:.*]] = arith.divui %[[TID]], %c32
// CHECK: %[[QUAD:.*]] = arith.remui %[[LANE]], %c4
// CHECK: %[[WARP_ROW:.*]] = arith.muli %[[WARP]], %c16
// CHECK: %[[LANE_ROW:.*]] = arith.divui %[[LANE]], %c4
// CHECK: %[[I:.*]] = arith.addi %[[WARP_ROW]], %[[LANE_ROW]]
// CHECK: %[[J:.*]] = arith.muli %[[QUAD]], %c2
// CHECK-NOT: memref.store
// CHECK: gpu.barrier
// CHECK-NEXT: %[[CHUNK:.*]] = arith.divui %[[I]], %c8
// CHECK-NEXT: %[[PHASE:.*]] = arith.remui %[[J]], %c8
// CHECK-NEXT: %[[LOW_CHUNK:.*]] = arith.remui %[[CHUNK]], %c8
// CHECK-NEXT: %[[SWIZZLED:.*]] = arith.xori %[[LOW_CHUNK]], %[[PHASE]]
// CHECK-NEXT: %[[PANEL:.*]] = arith.divui %[[CHUNK]], %c8
// CHECK-NEXT: %[[PANEL_ROW0:.*]] = arith.muli %[[PANEL]], %c32
// CHECK-NEXT: %[[PANEL_ROW:.*]] = arith.addi %[[PANEL_ROW0]], %[[J]]
// CHECK-NEXT: %[[ROW:.*]] = arith.divui %[[PANEL_ROW]], %c2
// CHECK-NEXT: %[[HALF:.*]] = arith.remui %[[PANEL_ROW]], %c2
// CHECK-NEXT: %[[HALF_CHUNKS:.*]] = arith.muli %[[HALF]], %c8
// CHECK-NEXT: %[[DEST_CHUNK:.*]] = arith.addi %[[HALF_CHUNKS]], %[[SWIZZLED]]
// CHECK-NEXT: %[[CHUNK_COL:.*]] = arith.muli %[[DEST_CHUNK]], %c8
// CHECK-NEXT: %[[IN_CHUNK:.*]] = arith.remui %[[I]], %c8
// CHECK-NEXT: %[[COL:.*]] = arith.addi %[[CHUNK_COL]], %[[IN_CHUNK]]
// CHECK-NEXT: memref.store %{{.*}}, %[[BUF]][%[[ROW]], %[[COL]]] : memref<32x128xbf16, #gpu.address_space<workgroup>>
// Element (i, j + 1): row j + 1, the same chunk swizzled by (j + 1) % 8.
// CHECK-NEXT: %[[J1:.*]] = arith.addi %[[J]], %c1
// CHECK-NEXT: %[[PHASE1:.*]] = arith.remui %[[J1]], %c8
// CHECK-NEXT: arith.xori %[[LOW_CHUNK]], %[[PHASE1]]
// CHECK-NEXT: arith.addi %[[PANEL_ROW0]], %[[J1]]
// CHECK-COUNT-15: memref.store %{{.*}}, %[[BUF]]
// CHECK-NOT: memref.store
// CHECK-NOT: vector.store
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: fa.
!t32 = memref<32x128xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @transposed_32(%src: memref<?x?x?x32xbf16>, %i: index) workgroup(%buf : !t32) kernel attributes {fa.tile = #fa.tile<wgmma = true>, known_block_size = array<i32: 256, 1, 1>} {
    %t = fa.load_tile %src[%i, %i, %i] : memref<?x?x?x32xbf16> -> vector<128x32xbf16>
    fa.store_tile_shared %t, %buf transposed : vector<128x32xbf16>, !t32
    gpu.return
  }
}

// -----

// Transposed into 64 x 128: 32 elements per lane, panels of 64 rows.
// CHECK-LABEL: gpu.func @transposed_64
// CHECK-SAME: workgroup(%[[BUF:[^ ]+]] :
// CHECK: gpu.barrier
// CHECK: arith.xori
// CHECK: arith.muli %{{.*}}, %c64
// CHECK-COUNT-32: memref.store %{{.*}}, %[[BUF]][%{{.*}}, %{{.*}}] : memref<64x128xbf16, #gpu.address_space<workgroup>>
// CHECK-NOT: memref.store
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
!t64 = memref<64x128xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @transposed_64(%src: memref<?x?x?x64xbf16>, %i: index) workgroup(%buf : !t64) kernel attributes {fa.tile = #fa.tile<wgmma = true>, known_block_size = array<i32: 256, 1, 1>} {
    %t = fa.load_tile %src[%i, %i, %i] : memref<?x?x?x64xbf16> -> vector<128x64xbf16>
    fa.store_tile_shared %t, %buf transposed : vector<128x64xbf16>, !t64
    gpu.return
  }
}

// -----

// Not transposed, into 128 x 64 (one 128-byte panel): each lane's pairs,
// 4 bytes each, as fa.store_tile stores them into its staging tile: row i,
// chunk n swizzled by i % 8 (the lane's phase xor n), 16 pairs per lane.
// CHECK-LABEL: gpu.func @plain
// CHECK-SAME: workgroup(%[[BUF:[^ ]+]] :
// CHECK: %[[I:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[J:.*]] = arith.muli %{{.*}}, %c2
// CHECK: gpu.barrier
// CHECK: %[[PHASE:.*]] = arith.remui %[[I]], %c8
// CHECK-NEXT: %[[CHUNK_COL0:.*]] = arith.muli %[[PHASE]], %c8
// CHECK-NEXT: %[[COL0:.*]] = arith.addi %[[CHUNK_COL0]], %[[J]]
// CHECK-NEXT: vector.store %{{.*}}, %[[BUF]][%[[I]], %[[COL0]]] {alignment = 4 : i64} : memref<128x64xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK: %[[CHUNK1:.*]] = arith.xori %[[PHASE]], %c1
// CHECK-NEXT: %[[CHUNK_COL1:.*]] = arith.muli %[[CHUNK1]], %c8
// CHECK-NEXT: %[[COL1:.*]] = arith.addi %[[CHUNK_COL1]], %[[J]]
// CHECK-NEXT: vector.store %{{.*}}, %[[BUF]][%[[I]], %[[COL1]]]
// CHECK-COUNT-14: vector.store %{{.*}}, %[[BUF]]
// CHECK-NOT: vector.store
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
!n64 = memref<128x64xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @plain(%src: memref<?x?x?x64xbf16>, %i: index) workgroup(%buf : !n64) kernel attributes {fa.tile = #fa.tile<wgmma = true>, known_block_size = array<i32: 256, 1, 1>} {
    %t = fa.load_tile %src[%i, %i, %i] : memref<?x?x?x64xbf16> -> vector<128x64xbf16>
    fa.store_tile_shared %t, %buf : vector<128x64xbf16>, !n64
    gpu.return
  }
}

// -----

// Without wgmma (mma.sync reads through ldmatrix, the generic proxy): no
// fence. One warp, 16 x 16 f16 transposed: 8 elements per lane.
// CHECK-LABEL: gpu.func @mma_sync
// CHECK: gpu.barrier
// CHECK-COUNT-8: memref.store
// CHECK-NOT: memref.store
// CHECK-NOT: nvvm.fence.proxy
// CHECK: gpu.barrier
// CHECK-NEXT: gpu.return
!s16 = memref<16x16xf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @mma_sync(%src: memref<?x?x?x16xf16>, %i: index) workgroup(%buf : !s16) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %t = fa.load_tile %src[%i, %i, %i] : memref<?x?x?x16xf16> -> vector<16x16xf16>
    fa.store_tile_shared %t, %buf transposed : vector<16x16xf16>, !s16
    gpu.return
  }
}

// -----

// f32: an 8-column block is two 16-byte chunks; the lane's pair is in chunk
// (2(l % 4)) / 4 of it, at element (2(l % 4)) % 4. 64-byte rows take runs of
// 4 chunks, phase (i / 2) % 4.
// CHECK-LABEL: gpu.func @plain_f32
// CHECK-SAME: workgroup(%[[BUF:[^ ]+]] :
// CHECK: %[[I:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[J:.*]] = arith.muli %{{.*}}, %c2
// CHECK: gpu.barrier
// CHECK: %[[CHUNK_LANE:.*]] = arith.divui %[[J]], %c4
// CHECK-NEXT: %[[IN_CHUNK:.*]] = arith.remui %[[J]], %c4
// CHECK-NEXT: %[[ROW_PAIR:.*]] = arith.divui %[[I]], %c2
// CHECK-NEXT: %[[PHASE:.*]] = arith.remui %[[ROW_PAIR]], %c4
// CHECK-NEXT: %[[CHUNK:.*]] = arith.xori %[[CHUNK_LANE]], %[[PHASE]]
// CHECK-NEXT: %[[CHUNK_COL:.*]] = arith.muli %[[CHUNK]], %c4
// CHECK-NEXT: %[[COL:.*]] = arith.addi %[[CHUNK_COL]], %[[IN_CHUNK]]
// CHECK-NEXT: vector.store %{{.*}}, %[[BUF]][%[[I]], %[[COL]]] {alignment = 8 : i64} : memref<16x16xf32, #gpu.address_space<workgroup>>, vector<2xf32>
// CHECK: %[[CHUNK1:.*]] = arith.xori %[[CHUNK]], %c2
// CHECK-COUNT-3: vector.store
// CHECK-NEXT: gpu.barrier
!f32tile = memref<16x16xf32, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @plain_f32(%src: memref<?x?x?x16xf32>, %i: index) workgroup(%buf : !f32tile) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %t = fa.load_tile %src[%i, %i, %i] : memref<?x?x?x16xf32> -> vector<16x16xf32>
    fa.store_tile_shared %t, %buf : vector<16x16xf32>, !f32tile
    gpu.return
  }
}
