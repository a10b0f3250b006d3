// RUN: fa-opt %s --convert-fa-to-nvgpu --canonicalize --cse --split-input-file | FileCheck %s

// fa.store_tile_shared: between two barriers each lane writes its values
// where fa.stage_tile would have put them; in wgmma kernels an async-proxy
// fence comes before the second barrier. The wgmma cases are the fused dQ
// product's: 8 warps (2 warpgroups, 128 rows, one 16-row block per warp),
// bf16 dS^T tiles. Lane l of warp w holds elements (i, j) with
// i = 16w + l/4 (+ 8), j = 2(l % 4) (+ 1, + 8n).

// Transposed into a 32 x 128 tile (256-byte rows: two 128-byte panels, as
// wgmma.mlir's @panels stages them), with stmatrix .trans: each 8 x 8 block
// of a warp's share is stored transposed, lane l giving the address of row
// l % 8 of block l / 8, which is (half, column block) = ((l / 8) % 2,
// n0 + l / 16): dest row j = 8 (l / 16) + l % 8 (+ 8 n0) receives tile rows
// i = 16w + 8 half + [0, 8), chunk i / 8 of row j, placed as fa.stage_tile
// places chunk i / 8 of row j (sharedChunkPosition): swizzled by j % 8, at
// panel row (chunk / 8) x 32 + j, i.e. memref row (panel row) / 2, chunk
// 8 x ((panel row) % 2) + swizzled. Two x4 stores per lane.
// CHECK-LABEL: gpu.func @transposed_32
// CHECK-SAME: workgroup(%[[BUF:[^ ]+]] :
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[LANE:.*]] = arith.remui %[[TID]], %c32
// CHECK: %[[WARP:.*]] = arith.divui %[[TID]], %c32
// CHECK: %[[WARP_ROW:.*]] = arith.muli %[[WARP]], %c16
// CHECK-NOT: nvvm.stmatrix
// CHECK: gpu.barrier
// CHECK-NEXT: %[[MATRIX:.*]] = arith.divui %[[LANE]], %c8
// CHECK-NEXT: %[[MATRIX_ROW:.*]] = arith.remui %[[LANE]], %c8
// CHECK-NEXT: %[[HALF:.*]] = arith.remui %[[MATRIX]], %c2
// CHECK-NEXT: %[[BLOCK:.*]] = arith.divui %[[MATRIX]], %c2
// CHECK-NEXT: %[[BLOCK_ROW:.*]] = arith.muli %[[BLOCK]], %c8
// CHECK-NEXT: %[[J:.*]] = arith.addi %[[BLOCK_ROW]], %[[MATRIX_ROW]]
// CHECK-NEXT: %[[WARP_CHUNK:.*]] = arith.divui %[[WARP_ROW]], %c8
// CHECK-NEXT: %[[CHUNK:.*]] = arith.addi %[[WARP_CHUNK]], %[[HALF]]
// CHECK-NEXT: %[[PHASE:.*]] = arith.remui %[[J]], %c8
// CHECK-NEXT: %[[LOW_CHUNK:.*]] = arith.remui %[[CHUNK]], %c8
// CHECK-NEXT: %[[SWIZZLED:.*]] = arith.xori %[[LOW_CHUNK]], %[[PHASE]]
// CHECK-NEXT: %[[PANEL:.*]] = arith.divui %[[CHUNK]], %c8
// CHECK-NEXT: %[[PANEL_ROW0:.*]] = arith.muli %[[PANEL]], %c32
// CHECK-NEXT: %[[PANEL_ROW:.*]] = arith.addi %[[PANEL_ROW0]], %[[J]]
// CHECK-NEXT: %[[ROW:.*]] = arith.divui %[[PANEL_ROW]], %c2
// CHECK-NEXT: %[[PANEL_HALF:.*]] = arith.remui %[[PANEL_ROW]], %c2
// CHECK-NEXT: %[[HALF_CHUNKS:.*]] = arith.muli %[[PANEL_HALF]], %c8
// CHECK-NEXT: %[[DEST_CHUNK:.*]] = arith.addi %[[HALF_CHUNKS]], %[[SWIZZLED]]
// CHECK-NEXT: %[[COL:.*]] = arith.muli %[[DEST_CHUNK]], %c8
// CHECK: %[[ROW_ELEMENTS:.*]] = arith.muli %[[ROW]], %c128
// CHECK-NEXT: %[[ELEMENT:.*]] = arith.addi %[[ROW_ELEMENTS]], %[[COL]]
// CHECK-NEXT: %[[BYTES:.*]] = arith.muli %[[ELEMENT]], %c2
// CHECK-NEXT: %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[BUF]]
// CHECK-NEXT: %[[ADDRESS:.*]] = arith.addi %[[BASE]], %[[BYTES]]
// CHECK-NEXT: %[[ADDRESS64:.*]] = arith.index_castui %[[ADDRESS]] : index to i64
// CHECK-NEXT: %[[POINTER:.*]] = llvm.inttoptr %[[ADDRESS64]] : i64 to !llvm.ptr<3>
// CHECK-NEXT: nvvm.stmatrix %[[POINTER]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
// Column blocks 2 and 3: dest rows 16 further down.
// CHECK-NEXT: arith.addi %[[J]], %c16
// CHECK: nvvm.stmatrix
// CHECK-NOT: nvvm.stmatrix
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

// Transposed into 64 x 128: 8 column blocks, four x4 stores per lane,
// panels of 64 rows.
// CHECK-LABEL: gpu.func @transposed_64
// CHECK-SAME: workgroup(%[[BUF:[^ ]+]] :
// CHECK: gpu.barrier
// CHECK: arith.xori
// CHECK: arith.muli %{{.*}}, %c64
// CHECK-COUNT-4: nvvm.stmatrix
// CHECK-NOT: nvvm.stmatrix
// CHECK-NOT: memref.store
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
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

// no_leading_barrier (the fused dQ's dS^T slots): the stores start without a
// barrier; the fence and the barrier after them stay.
// CHECK-LABEL: gpu.func @no_leading_barrier
// CHECK-NOT: gpu.barrier
// CHECK-COUNT-4: nvvm.stmatrix
// CHECK-NOT: gpu.barrier
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: gpu.return
!t64 = memref<64x128xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @no_leading_barrier(%src: memref<?x?x?x64xbf16>, %i: index) workgroup(%buf : !t64) kernel attributes {fa.tile = #fa.tile<wgmma = true>, known_block_size = array<i32: 256, 1, 1>} {
    %t = fa.load_tile %src[%i, %i, %i] : memref<?x?x?x64xbf16> -> vector<128x64xbf16>
    fa.store_tile_shared %t, %buf transposed no_leading_barrier : vector<128x64xbf16>, !t64
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
// fence. One warp, 16 x 16 f16 transposed: one x4 store per lane.
// CHECK-LABEL: gpu.func @mma_sync
// CHECK: gpu.barrier
// CHECK: nvvm.stmatrix
// CHECK-NOT: nvvm.stmatrix
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

// -----

// f32 transposed (no 32-bit stmatrix): one 4-byte store per element, element
// (i, j) at row j, chunk i / 4 swizzled by (j / 2) % 4 (64-byte rows), 8
// per lane.
// CHECK-LABEL: gpu.func @transposed_f32
// CHECK-SAME: workgroup(%[[BUF:[^ ]+]] :
// CHECK: %[[I:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[J:.*]] = arith.muli %{{.*}}, %c2
// CHECK: gpu.barrier
// CHECK-NEXT: %[[CHUNK:.*]] = arith.divui %[[I]], %c4
// CHECK-NEXT: %[[ROW_PAIR:.*]] = arith.divui %[[J]], %c2
// CHECK-NEXT: %[[PHASE:.*]] = arith.remui %[[ROW_PAIR]], %c4
// CHECK-NEXT: %[[SWIZZLED:.*]] = arith.xori %[[CHUNK]], %[[PHASE]]
// CHECK-NEXT: %[[CHUNK_COL:.*]] = arith.muli %[[SWIZZLED]], %c4
// CHECK-NEXT: %[[IN_CHUNK:.*]] = arith.remui %[[I]], %c4
// CHECK-NEXT: %[[COL:.*]] = arith.addi %[[CHUNK_COL]], %[[IN_CHUNK]]
// CHECK: memref.store %{{.*}}, %[[BUF]][%[[J]], %[[COL]]] : memref<16x16xf32, #gpu.address_space<workgroup>>
// CHECK-COUNT-7: memref.store
// CHECK-NOT: memref.store
// CHECK-NOT: nvvm.stmatrix
// CHECK: gpu.barrier
!f32tile = memref<16x16xf32, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @transposed_f32(%src: memref<?x?x?x16xf32>, %i: index) workgroup(%buf : !f32tile) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %t = fa.load_tile %src[%i, %i, %i] : memref<?x?x?x16xf32> -> vector<16x16xf32>
    fa.store_tile_shared %t, %buf transposed : vector<16x16xf32>, !f32tile
    gpu.return
  }
}
