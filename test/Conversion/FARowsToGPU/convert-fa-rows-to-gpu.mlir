// RUN: fa-opt %s --convert-fa-rows-to-gpu --canonicalize --cse --split-input-file --verify-diagnostics | FileCheck %s

// One row over 128 threads (8 columns each): a chunk inside the row and on
// an aligned row is one 16-byte load, the rest a masked load; the row sum
// reduces in registers, across the warp with xor shuffles, then across the
// four warps through shared memory (one barrier: the reduction runs once);
// the first thread of the row stores it.
// CHECK-LABEL: gpu.func @row_sum
// CHECK-SAME: workgroup(%[[SCRATCH:.*]] : memref<4xf32, #gpu.address_space<workgroup>> {llvm.align = 32 : i64})
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[ROWIN:.*]] = arith.divui %[[TID]], %c128
// CHECK: %[[P:.*]] = arith.remui %[[TID]], %c128
// CHECK: %[[COL:.*]] = arith.muli %[[P]], %c8
// CHECK: %[[ROW:.*]] = arith.addi %{{.*}}, %[[ROWIN]]
// CHECK: %[[CHUNK:.*]] = scf.if %{{.*}} -> (vector<8xbf16>) {
// CHECK:   vector.load %{{.*}}[%[[ROW]], %{{.*}}] {alignment = 16 : i64} : memref<?x?xbf16>, vector<8xbf16>
// CHECK: } else {
// CHECK:   %[[MASK:.*]] = vector.create_mask %{{.*}} : vector<8xi1>
// CHECK:   vector.maskedload %{{.*}}[%[[ROW]], %{{.*}}], %[[MASK]]
// CHECK: }
// CHECK: %[[F:.*]] = arith.extf %{{.*}} : vector<8xbf16> to vector<8xf32>
// CHECK: %[[LOCAL:.*]] = vector.reduction <add>, %[[F]] : vector<8xf32> into f32
// CHECK: gpu.shuffle xor %[[LOCAL]], %c16_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c8_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c4_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c2_i32
// CHECK: %[[S1:.*]], %{{.*}} = gpu.shuffle xor %{{.*}}, %c1_i32
// CHECK: %[[WARPSUM:.*]] = arith.addf %{{.*}}, %[[S1]] : f32
// CHECK-NOT: gpu.barrier
// CHECK: scf.if
// CHECK:   memref.store %[[WARPSUM]], %[[SCRATCH]]
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK-COUNT-4: memref.load %[[SCRATCH]]
// CHECK: scf.if
// CHECK:   memref.store %{{.*}}, %{{.*}}[%[[ROW]]] : memref<?xf32>
gpu.module @m {
  gpu.func @row_sum(%x: memref<?x?xbf16>, %sums: memref<?xf32>, %row: index) kernel attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024>, known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant dense<0.0> : vector<1xf32>
    %b = fa.load_block %x[%row, %c0] : memref<?x?xbf16> -> vector<1x1024xbf16>
    %f = arith.extf %b : vector<1x1024xbf16> to vector<1x1024xf32>
    %s = vector.multi_reduction <add>, %f, %zero [1] : vector<1x1024xf32> to vector<1xf32>
    fa.store_block %s, %sums[%row] : vector<1xf32>, memref<?xf32>
    gpu.return
  }
}

// -----

// Each reduction gets a scratch buffer of its own. In a loop, one that is
// alone in the body also needs a barrier before its writes (the previous
// iteration's reads may still be under way); two in one body separate each
// other's iterations with their own barriers.
// CHECK-LABEL: gpu.func @reductions_in_loops
// CHECK-SAME: workgroup(%[[A:.*]] : memref<4xf32, #gpu.address_space<workgroup>> {llvm.align = 32 : i64}, %[[B:.*]] : memref<4xf32, #gpu.address_space<workgroup>> {llvm.align = 32 : i64}, %[[C:.*]] : memref<4xf32, #gpu.address_space<workgroup>> {llvm.align = 32 : i64})
// CHECK: scf.for
// CHECK:   gpu.barrier
// CHECK:   memref.store %{{.*}}, %[[A]]
// CHECK:   gpu.barrier
// CHECK:   memref.load %[[A]]
// CHECK: scf.for
// CHECK-NOT: gpu.barrier
// CHECK:   memref.store %{{.*}}, %[[B]]
// CHECK:   gpu.barrier
// CHECK:   memref.load %[[B]]
// CHECK-NOT: gpu.barrier
// CHECK:   memref.store %{{.*}}, %[[C]]
// CHECK:   gpu.barrier
// CHECK:   memref.load %[[C]]
gpu.module @m {
  gpu.func @reductions_in_loops(%x: memref<?x?xf32>, %n: index) kernel attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024>, known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant dense<0.0> : vector<1xf32>
    %alone = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (vector<1xf32>) {
      %b = fa.load_block %x[%i, %c0] : memref<?x?xf32> -> vector<1x1024xf32>
      %s = vector.multi_reduction <add>, %b, %acc [1] : vector<1x1024xf32> to vector<1xf32>
      scf.yield %s : vector<1xf32>
    }
    %pair:2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc0 = %zero, %acc1 = %zero) -> (vector<1xf32>, vector<1xf32>) {
      %b = fa.load_block %x[%i, %c0] : memref<?x?xf32> -> vector<1x1024xf32>
      %s = vector.multi_reduction <add>, %b, %acc0 [1] : vector<1x1024xf32> to vector<1xf32>
      %sq = arith.mulf %b, %b : vector<1x1024xf32>
      %t = vector.multi_reduction <add>, %sq, %acc1 [1] : vector<1x1024xf32> to vector<1xf32>
      scf.yield %s, %t : vector<1xf32>, vector<1xf32>
    }
    gpu.return
  }
}

// -----

// A row per warp: the shuffles finish the reduction, no shared memory and
// no barrier. Per-row values are scalars; the row broadcast splats one.
// CHECK-LABEL: gpu.func @row_per_warp
// CHECK-NOT: workgroup
// CHECK-NOT: gpu.barrier
// CHECK: vector.reduction <maxnumf>, %{{.*}} : vector<8xf32> into f32
// CHECK: gpu.shuffle xor %{{.*}}, %c16_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32
// CHECK: arith.maxnumf
// CHECK: %[[MAX:.*]] = arith.maxnumf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: %[[SPLAT:.*]] = vector.broadcast %[[MAX]] : f32 to vector<8xf32>
// CHECK: arith.subf %{{.*}}, %[[SPLAT]] : vector<8xf32>
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return
gpu.module @m {
  gpu.func @row_per_warp(%x: memref<?x?xf32>, %y: memref<?x?xf32>, %row: index) kernel attributes {fa.rows = #fa.rows<rows = 4, block_cols = 256>, known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %init = arith.constant dense<0xFF800000> : vector<4xf32>
    %b = fa.load_block %x[%row, %c0] : memref<?x?xf32> -> vector<4x256xf32>
    %m = vector.multi_reduction <maxnumf>, %b, %init [1] : vector<4x256xf32> to vector<4xf32>
    %mb = fa.row_broadcast %m : vector<4xf32> -> vector<4x256xf32>
    %d = arith.subf %b, %mb : vector<4x256xf32>
    fa.store_block %d, %y[%row, %c0] : vector<4x256xf32>, memref<?x?xf32>
    gpu.return
  }
}

// -----

// Column sums of 64 rows over 256 threads (4 per row): xor shuffles by 4, 8
// and 16 combine the 8 rows of a warp, shared memory the 8 warps; only the
// first row's threads store the (replicated) result.
// CHECK-LABEL: gpu.func @column_sum
// CHECK-SAME: workgroup(%[[SCRATCH:.*]] : memref<8x32xf32, #gpu.address_space<workgroup>> {llvm.align = 32 : i64})
// CHECK: %[[ROWIN:.*]] = arith.divui %{{.*}}, %c4
// CHECK-COUNT-8: gpu.shuffle xor %{{.*}}, %c4_i32
// CHECK-COUNT-8: gpu.shuffle xor %{{.*}}, %c8_i32
// CHECK-COUNT-8: gpu.shuffle xor %{{.*}}, %c16_i32
// CHECK: %[[SUMS:.*]] = vector.from_elements
// CHECK-NOT: gpu.barrier
// CHECK: scf.if
// CHECK:   vector.store %[[SUMS]], %[[SCRATCH]]
// CHECK: gpu.barrier
// CHECK-COUNT-8: vector.load %[[SCRATCH]]
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[ROWIN]], %c0
// CHECK: scf.if %[[FIRST]] {
// CHECK:   vector.store %{{.*}}, %{{.*}} {alignment = 32 : i64} : memref<?xf32>, vector<8xf32>
gpu.module @m {
  gpu.func @column_sum(%p: memref<?x?xf32>, %out: memref<?xf32>, %col: index) kernel attributes {fa.rows = #fa.rows<rows = 64, block_cols = 32>, known_block_size = array<i32: 256, 1, 1>} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant dense<0.0> : vector<32xf32>
    %b = fa.load_block %p[%c0, %col] : memref<?x?xf32> -> vector<64x32xf32>
    %s = vector.multi_reduction <add>, %b, %zero [0] : vector<64x32xf32> to vector<32xf32>
    fa.store_block %s, %out[%col] : vector<32xf32>, memref<?xf32>
    gpu.return
  }
}

// -----

// Two chunks per thread (K = 2, 256 columns apart); zero_columns compares
// constant per-element offsets with one i32 threshold per thread.
// CHECK-LABEL: gpu.func @zero_past_end
// CHECK-DAG: %[[OFFSETS:.*]] = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 256, 257, 258, 259, 260, 261, 262, 263]> : vector<16xi32>
// CHECK: vector.insert_strided_slice %{{.*}} {offsets = [0], strides = [1]} : vector<8xf32> into vector<16xf32>
// CHECK: %[[SHARE:.*]] = vector.insert_strided_slice %{{.*}} {offsets = [8], strides = [1]} : vector<8xf32> into vector<16xf32>
// CHECK: %[[T:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: %[[TV:.*]] = vector.broadcast %[[T]] : i32 to vector<16xi32>
// CHECK: %[[IN:.*]] = arith.cmpi sgt, %[[TV]], %[[OFFSETS]] : vector<16xi32>
// CHECK: arith.select %[[IN]], %[[SHARE]], %{{.*}} : vector<16xi1>, vector<16xf32>
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [0], sizes = [8], strides = [1]}
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [8], sizes = [8], strides = [1]}
gpu.module @m {
  gpu.func @zero_past_end(%x: memref<?x?xf32>, %y: memref<?x?xf32>, %row: index, %col: index, %limit: index) kernel attributes {fa.rows = #fa.rows<rows = 4, block_cols = 512>, known_block_size = array<i32: 128, 1, 1>} {
    %b = fa.load_block %x[%row, %col] : memref<?x?xf32> -> vector<4x512xf32>
    %z = fa.zero_columns %b cols(%col) limit(%limit) : vector<4x512xf32>
    fa.store_block %z, %y[%row, %col] : vector<4x512xf32>, memref<?x?xf32>
    gpu.return
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{convert-fa-rows-to-gpu: a column reduction needs at most 32 threads per row, got 128}}
  gpu.func @wide_column_sum(%p: memref<?x?xf32>, %out: memref<?xf32>) kernel attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024>, known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant dense<0.0> : vector<1024xf32>
    %b = fa.load_block %p[%c0, %c0] : memref<?x?xf32> -> vector<1x1024xf32>
    %s = vector.multi_reduction <add>, %b, %zero [0] : vector<1x1024xf32> to vector<1024xf32>
    fa.store_block %s, %out[%c0] : vector<1024xf32>, memref<?xf32>
    gpu.return
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{convert-fa-rows-to-gpu: block_cols (100) must be a multiple of 1024}}
  gpu.func @bad_layout(%x: memref<?x?xf32>) kernel attributes {fa.rows = #fa.rows<rows = 1, block_cols = 100>, known_block_size = array<i32: 128, 1, 1>} {
    gpu.return
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{convert-fa-rows-to-gpu: needs at most 1024 threads (a CUDA block's limit), got 2048}}
  gpu.func @rows_block(%x: memref<?x?xf32>) kernel attributes {fa.rows = #fa.rows<rows = 1, block_cols = 16384>, known_block_size = array<i32: 2048, 1, 1>} {
    gpu.return
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{convert-fa-rows-to-gpu: block_cols (1048576) gives each of the 128 threads of a row 8192 values to hold, more than 64}}
  gpu.func @rows_values(%x: memref<?x?xf32>) kernel attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1048576>, known_block_size = array<i32: 128, 1, 1>} {
    gpu.return
  }
}

// -----

// The thread layout follows from the block size.
gpu.module @m {
  // expected-error @+1 {{convert-fa-rows-to-gpu: expects known_block_size = [threads, 1, 1]}}
  gpu.func @no_block_size(%x: memref<?x?xf32>) kernel attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024>} {
    gpu.return
  }
}
