// RUN: fa-opt %s --convert-fa-to-nvgpu --canonicalize --cse | FileCheck %s

// The ops the attention backward adds, in the accumulator layout (64 rows,
// 4 warps: each lane holds rows l/4 and l/4 + 8 of its warp's 16, and
// columns 8n + 2(l%4) + {0, 1} of every 8-column block n).
// load_rows: one load per row of the lane, zero past the sequence (the
// index clamped in bounds).
// CHECK-LABEL: gpu.func @stats
// CHECK: %[[SEQ:.*]] = memref.dim %arg0, %c2
// CHECK: %[[IN:.*]] = arith.cmpi ult, %{{.*}}, %[[SEQ]] : index
// CHECK: %[[CLAMPED:.*]] = arith.minui
// CHECK: %[[V:.*]] = memref.load %arg0[%arg2, %arg3, %[[CLAMPED]]]
// CHECK: arith.select %[[IN]], %[[V]], %{{.*}} : f32
// column_broadcast: two values per 8-column block (16 loads for 64 columns),
// each repeated for the lane's two rows.
// CHECK-COUNT-16: memref.load %arg0
// CHECK: %[[COLS:.*]] = vector.from_elements {{.*}} : vector<8x4xf32>
// The transposed causal mask: a key (row) after its query (column) is
// masked, as is a column at or past the query length.
// CHECK: arith.cmpi sle, %{{.*}} : vector<8x4xi32>
// CHECK: arith.cmpi sgt, %{{.*}} : vector<8x4xi32>
// CHECK: arith.ori
// CHECK: arith.select %{{.*}}, %{{.*}}, %[[COLS]] : vector<8x4xi1>, vector<8x4xf32>
gpu.module @m {
  gpu.func @stats(%lse: memref<?x?x?xf32>, %o: memref<?x?x?x64xf32>, %b: index, %h: index, %r: index, %c: index, %n: index) kernel attributes {fa.tile = #fa.tile<block_m = 64, num_warps = 4>, known_block_size = array<i32: 128, 1, 1>} {
    %rows = fa.load_rows %lse[%b, %h, %r] : memref<?x?x?xf32> -> vector<64xf32>
    %cols = fa.column_broadcast %lse[%b, %h, %c] : memref<?x?x?xf32> -> vector<64x64xf32>
    %m = fa.apply_mask %cols rows(%r) cols(%c) kv_len(%n) causal transposed : vector<64x64xf32>
    %rb = fa.row_broadcast %rows : vector<64xf32> -> vector<64x64xf32>
    %s = arith.addf %m, %rb : vector<64x64xf32>
    fa.store_tile %s, %o[%b, %h, %r] : vector<64x64xf32>, memref<?x?x?x64xf32>
    gpu.return
  }
}

// Rows of lse staged in shared memory (64 values, 128 threads: the first 64
// copy one each). stage_rows: a clamped load and a store between barriers;
// copy_rows_async: a 4-byte cp.async (.ca: no L1 bypass below 16 bytes),
// zero-filled past the sequence, then a commit group; column_broadcast_shared:
// the lane's pair of every 8-column block in one 8-byte shared load, no
// bounds.
// CHECK-LABEL: gpu.func @staged_rows
// CHECK: gpu.barrier
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: %[[HAS:.*]] = arith.cmpi ult, %[[T]], %c64 : index
// CHECK: scf.if %[[HAS]] {
// CHECK: arith.minui
// CHECK: %[[V:.*]] = memref.load %arg0
// CHECK: %[[Z:.*]] = arith.select %{{.*}}, %[[V]], %{{.*}} : f32
// CHECK: memref.store %[[Z]], %arg5[%[[T]]] : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK: }
// CHECK: gpu.barrier
// CHECK: scf.if %[[HAS]] {
// CHECK: %[[POS:.*]] = arith.addi %arg3, %[[T]] : index
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[POS]], %{{.*}} : index
// CHECK: %[[SIZE:.*]] = arith.select %[[IN]], %c1, %c0 : index
// CHECK: %[[CLAMPED:.*]] = arith.minui %[[POS]], %{{.*}} : index
// CHECK: nvgpu.device_async_copy %arg0[%arg1, %arg2, %[[CLAMPED]]], %arg5[%[[T]]], 1, %[[SIZE]] : memref<?x?x?xf32> to memref<64xf32, #gpu.address_space<workgroup>>
// CHECK: }
// CHECK-NEXT: nvvm.cp.async.commit.group
// CHECK-NOT: memref.load
// CHECK-COUNT-8: vector.load %arg5[%{{.*}}] {alignment = 8 : i64} : memref<64xf32, #gpu.address_space<workgroup>>, vector<2xf32>
// CHECK-NOT: memref.load
gpu.module @rows {
  gpu.func @staged_rows(%lse: memref<?x?x?xf32>, %b: index, %h: index, %c: index, %o: memref<?x?x?x64xf32>) workgroup(%rows : memref<64xf32, #gpu.address_space<workgroup>>) kernel attributes {fa.tile = #fa.tile<block_m = 64, num_warps = 4>, known_block_size = array<i32: 128, 1, 1>} {
    fa.stage_rows %lse[%b, %h, %c] into %rows : memref<?x?x?xf32>, memref<64xf32, #gpu.address_space<workgroup>>
    fa.copy_rows_async %lse[%b, %h, %c] into %rows : memref<?x?x?xf32>, memref<64xf32, #gpu.address_space<workgroup>>
    %cols = fa.column_broadcast_shared %rows : memref<64xf32, #gpu.address_space<workgroup>> -> vector<64x64xf32>
    fa.store_tile %cols, %o[%b, %h, %c] : vector<64x64xf32>, memref<?x?x?x64xf32>
    gpu.return
  }
}
