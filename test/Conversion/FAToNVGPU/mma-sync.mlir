// RUN: fa-opt %s --convert-fa-to-nvgpu --canonicalize --cse --split-input-file | FileCheck %s

// Input: fa.tile_matmul on f16/bf16 16 x 16 tiles in one-warp kernels
// (known_block_size 32), without wgmma: mma.sync.m16n8k16 with f32
// accumulators, B (and a shared A) read with ldmatrix from the XOR-swizzled
// shared tile.

// Scores S = Q K^T with Q in registers: the lane's pairs of Q are the A
// operand as they are (no data movement); one ldmatrix.x4 of K (its rows are
// S's columns, so not transposed) gives the B operands of both 8-column
// blocks of S, one mma.sync each.
// CHECK-LABEL: gpu.func @register_a
// CHECK-SAME: workgroup(%[[KB:[^ ]+]] :
// CHECK: %[[A0:.*]] = vector.extract_strided_slice %{{.*}} {offsets = [0], sizes = [2], strides = [1]} : vector<4xf16> to vector<2xf16>
// CHECK: %[[A1:.*]] = vector.extract_strided_slice %{{.*}} {offsets = [2], sizes = [2], strides = [1]} : vector<4xf16> to vector<2xf16>
// CHECK: %[[A2:.*]] = vector.extract_strided_slice %{{.*}} {offsets = [0], sizes = [2], strides = [1]} : vector<4xf16> to vector<2xf16>
// CHECK: %[[A3:.*]] = vector.extract_strided_slice %{{.*}} {offsets = [2], sizes = [2], strides = [1]} : vector<4xf16> to vector<2xf16>
// CHECK: %[[SWIZZLED:.*]] = arith.xori
// CHECK: %[[CHUNK_COL:.*]] = arith.muli %[[SWIZZLED]], %c8
// CHECK: %[[B:.*]] = nvgpu.ldmatrix %[[KB]][%{{.*}}, %[[CHUNK_COL]]] {numTiles = 4 : i32, transpose = false} : memref<16x16xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK: %[[B0:.*]] = vector.extract %[[B]][0]
// CHECK: %[[B1:.*]] = vector.extract %[[B]][1]
// CHECK: nvvm.mma.sync A[%[[A0]], %[[A1]], %[[A2]], %[[A3]]] B[%[[B0]], %[[B1]]] C[{{.*}}]
// CHECK-SAME: shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: %[[B2:.*]] = vector.extract %[[B]][2]
// CHECK: %[[B3:.*]] = vector.extract %[[B]][3]
// CHECK: nvvm.mma.sync A[%[[A0]], %[[A1]], %[[A2]], %[[A3]]] B[%[[B2]], %[[B3]]]
// CHECK-NOT: nvvm.mma.sync
// CHECK-NOT: nvgpu.ldmatrix
!t = memref<?x?x?x16xf16>
!smem = memref<16x16xf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @register_a(%q: !t, %o: memref<?x?x?x16xf32>, %b: index, %h: index, %row0: index) workgroup(%kb : !smem) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %zero = arith.constant dense<0.0> : vector<16x16xf32>
    %qt = fa.load_tile %q[%b, %h, %row0] : !t -> vector<16x16xf16>
    %s = fa.tile_matmul %qt, %kb, %zero transpose_b : vector<16x16xf16>, !smem, vector<16x16xf32>
    fa.store_tile %s, %o[%b, %h, %row0] : vector<16x16xf32>, memref<?x?x?x16xf32>
    gpu.return
  }
}

// -----

// P @ V: V's rows are the reduction dimension, so ldmatrix transposes; bf16
// operands go to mma.sync as i32 pairs with bf16 multiplicand types.
// CHECK-LABEL: gpu.func @transposed_b
// CHECK-SAME: workgroup(%[[VB:[^ ]+]] :
// CHECK: %[[B:.*]] = nvgpu.ldmatrix %[[VB]][%{{.*}}, %{{.*}}] {numTiles = 4 : i32, transpose = true} : memref<16x16xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}]
// CHECK-SAME: multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>
// CHECK-SAME: shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32)
// CHECK: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
!t = memref<?x?x?x16xbf16>
!smem = memref<16x16xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @transposed_b(%p: !t, %o: memref<?x?x?x16xf32>, %b: index, %h: index, %row0: index) workgroup(%vb : !smem) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %zero = arith.constant dense<0.0> : vector<16x16xf32>
    %pt = fa.load_tile %p[%b, %h, %row0] : !t -> vector<16x16xbf16>
    %o_tile = fa.tile_matmul %pt, %vb, %zero : vector<16x16xbf16>, !smem, vector<16x16xf32>
    fa.store_tile %o_tile, %o[%b, %h, %row0] : vector<16x16xf32>, memref<?x?x?x16xf32>
    gpu.return
  }
}

// -----

// block_m = 32 on one warp: the warp owns two 16-row blocks. A shared A (the
// query tile in shared memory) is read with ldmatrix through a view of the
// warp's 32 rows, once per row block; each B fragment then feeds one
// mma.sync per row block.
// CHECK-LABEL: gpu.func @two_row_blocks
// CHECK-SAME: workgroup(%[[QB:[^ ]+]] : memref<32x16xf16, #gpu.address_space<workgroup>>, %[[KB:[^ ]+]] :
// CHECK: %[[WARP_ROWS:.*]] = memref.subview %[[QB]][%{{.*}}, 0] [32, 16] [1, 1]
// CHECK: %[[A_TOP:.*]] = nvgpu.ldmatrix %[[WARP_ROWS]][%{{.*}}] {numTiles = 4 : i32, transpose = false}
// CHECK: %[[A_TOP0:.*]] = vector.extract %[[A_TOP]][0]
// CHECK: %[[A_BOTTOM:.*]] = nvgpu.ldmatrix %[[WARP_ROWS]][%{{.*}}] {numTiles = 4 : i32, transpose = false}
// CHECK: %[[A_BOTTOM0:.*]] = vector.extract %[[A_BOTTOM]][0]
// CHECK: %[[B:.*]] = nvgpu.ldmatrix %[[KB]]
// CHECK: %[[B0:.*]] = vector.extract %[[B]][0]
// CHECK: %[[B1:.*]] = vector.extract %[[B]][1]
// CHECK: nvvm.mma.sync A[%[[A_TOP0]], {{.*}}] B[%[[B0]], %[[B1]]]
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: nvvm.mma.sync A[%[[A_BOTTOM0]], {{.*}}] B[%[[B0]], %[[B1]]]
// CHECK: %[[B2:.*]] = vector.extract %[[B]][2]
// CHECK: %[[B3:.*]] = vector.extract %[[B]][3]
// CHECK: nvvm.mma.sync A[%[[A_TOP0]], {{.*}}] B[%[[B2]], %[[B3]]]
// CHECK: nvvm.mma.sync A[%[[A_BOTTOM0]], {{.*}}] B[%[[B2]], %[[B3]]]
// CHECK-NOT: nvvm.mma.sync
// The accumulator: two row blocks of two 8-column blocks, 4 rows per lane.
// CHECK-COUNT-8: vector.store %{{.*}} : memref<?x?x?x16xf32>, vector<2xf32>
// CHECK-NOT: vector.store
!qsmem = memref<32x16xf16, #gpu.address_space<workgroup>>
!smem = memref<16x16xf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @two_row_blocks(%o: memref<?x?x?x16xf32>, %b: index, %h: index, %row0: index) workgroup(%qb : !qsmem, %kb : !smem) kernel attributes {fa.tile = #fa.tile<block_m = 32>, known_block_size = array<i32: 32, 1, 1>} {
    %zero = arith.constant dense<0.0> : vector<32x16xf32>
    %s = fa.tile_matmul %qb, %kb, %zero transpose_b : !qsmem, !smem, vector<32x16xf32>
    fa.store_tile %s, %o[%b, %h, %row0] : vector<32x16xf32>, memref<?x?x?x16xf32>
    gpu.return
  }
}

// -----

// Rows of 64 bytes (f16 head_dim 32) swizzle in runs of 4 chunks with phase
// (row / 2) % 4: the lane's ldmatrix chunk is its matrix's chunk XOR that
// phase, and the second k step (chunks 2-3) XORs 2 into it, staying inside
// the row (an 8-chunk swizzle would XOR row % 8 into chunks 0-3).
// CHECK-LABEL: gpu.func @rows_of_64_bytes
// CHECK-SAME: workgroup(%[[KB:[^ ]+]] :
// CHECK: %[[MATRIX_LOW:.*]] = arith.remui %{{.*}}, %c2
// CHECK: %[[ROW:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[ROW_PAIR:.*]] = arith.divui %[[ROW]], %c2
// CHECK-NEXT: %[[PHASE:.*]] = arith.remui %[[ROW_PAIR]], %c4
// CHECK-NEXT: %[[CHUNK:.*]] = arith.xori %[[MATRIX_LOW]], %[[PHASE]]
// CHECK: %[[COL:.*]] = arith.muli %[[CHUNK]], %c8
// CHECK: nvgpu.ldmatrix %[[KB]][%[[ROW]], %[[COL]]] {numTiles = 4 : i32, transpose = false} : memref<16x32xf16
// CHECK: %[[CHUNK2:.*]] = arith.xori %[[CHUNK]], %c2
// CHECK: %[[COL2:.*]] = arith.muli %[[CHUNK2]], %c8
// CHECK: nvgpu.ldmatrix %[[KB]][%[[ROW]], %[[COL2]]] {numTiles = 4 : i32, transpose = false} : memref<16x32xf16
!t = memref<?x?x?x32xf16>
!smem = memref<16x32xf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @rows_of_64_bytes(%q: !t, %o: memref<?x?x?x16xf32>, %b: index, %h: index, %row0: index) workgroup(%kb : !smem) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %zero = arith.constant dense<0.0> : vector<16x16xf32>
    %qt = fa.load_tile %q[%b, %h, %row0] : !t -> vector<16x32xf16>
    %s = fa.tile_matmul %qt, %kb, %zero transpose_b : vector<16x32xf16>, !smem, vector<16x16xf32>
    fa.store_tile %s, %o[%b, %h, %row0] : vector<16x16xf32>, memref<?x?x?x16xf32>
    gpu.return
  }
}
