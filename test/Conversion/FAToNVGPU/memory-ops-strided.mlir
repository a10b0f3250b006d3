// RUN: fa-opt %s --convert-fa-to-nvgpu --canonicalize --cse | FileCheck %s
// RUN: fa-opt %s --convert-fa-to-nvgpu --canonicalize --cse --convert-nvgpu-to-nvvm --gpu-kernel-outlining --convert-gpu-to-nvvm --reconcile-unrealized-casts | FileCheck %s --check-prefix=NVVM

// Strided views (strided<[?, ?, ?, 1], offset: ?>: one head of a fused
// buffer) are indexed as contiguous tensors are, [batch, head, row, col]:
// every global load, store and cp.async of the tile ops keeps the view's
// type, and the memref-to-LLVM lowering turns the indices into addresses
// with the descriptor's strides and offset.
// CHECK-LABEL: gpu.func @strided_tiles
// CHECK-SAME: (%[[Q:[^:]*]]: memref<?x?x?x16xf16, strided<[?, ?, ?, 1], offset: ?>>, %[[K:[^:]*]]: memref<?x?x?x16xf16, strided<[?, ?, ?, 1], offset: ?>>, %[[O:[^:]*]]: memref<?x?x?x16xf16, strided<[?, ?, ?, 1], offset: ?>>, %[[B:[^:]*]]: index, %[[H:[^:]*]]: index
// load_tile: each lane's pairs.
// CHECK-COUNT-4: vector.load %[[Q]][%[[B]], %[[H]], %{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<?x?x?x16xf16, strided<[?, ?, ?, 1], offset: ?>>, vector<2xf16>
// stage_tile: 16-byte chunks.
// CHECK: vector.load %[[K]][%[[B]], %[[H]], %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x?x?x16xf16, strided<[?, ?, ?, 1], offset: ?>>, vector<8xf16>
// copy_tile_async: cp.async from the view.
// CHECK: nvgpu.device_async_copy %[[K]][%[[B]], %[[H]], %{{.*}}, %{{.*}}], %{{.*}}, 8, %{{.*}} {bypassL1} : memref<?x?x?x16xf16, strided<[?, ?, ?, 1], offset: ?>> to memref<16x16xf16
// store_tile: each lane's pairs, then through the staging tile in 16-byte
// chunks.
// CHECK-COUNT-4: vector.store %{{.*}}, %[[O]][%[[B]], %[[H]], %{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<?x?x?x16xf16, strided<[?, ?, ?, 1], offset: ?>>, vector<2xf16>
// CHECK: vector.store %{{.*}}, %[[O]][%[[B]], %[[H]], %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x?x?x16xf16, strided<[?, ?, ?, 1], offset: ?>>, vector<8xf16>
// CHECK-NOT: fa.

// After the upstream lowering, the address of a view's element is the
// aligned pointer + (offset + b * stride0 + h * stride1 + row * stride2 +
// col) elements: the descriptor's offset (field 2) and strides (field 4)
// are read, not assumed row-major.
// NVVM-LABEL: llvm.func @strided_tiles
// NVVM: llvm.extractvalue %{{.*}}[2] : !llvm.struct<(ptr, ptr, i64, array<4 x i64>, array<4 x i64>)>
// NVVM: llvm.extractvalue %{{.*}}[4, 0] : !llvm.struct<(ptr, ptr, i64, array<4 x i64>, array<4 x i64>)>
// NVVM: llvm.extractvalue %{{.*}}[4, 1] : !llvm.struct<(ptr, ptr, i64, array<4 x i64>, array<4 x i64>)>
// NVVM: llvm.extractvalue %{{.*}}[4, 2] : !llvm.struct<(ptr, ptr, i64, array<4 x i64>, array<4 x i64>)>
// NVVM: llvm.getelementptr
// NVVM: nvvm.cp.async.shared.global
!t = memref<?x?x?x16xf16, strided<[?, ?, ?, 1], offset: ?>>
!smem = memref<16x16xf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @strided_tiles(%q: !t, %k: !t, %o: !t, %b: index, %h: index, %row0: index) workgroup(%kb : !smem, %vb : !smem, %st : !smem) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %t = fa.load_tile %q[%b, %h, %row0] : !t -> vector<16x16xf16>
    fa.stage_tile %k[%b, %h, %row0] into %kb : !t, !smem
    fa.copy_tile_async %k[%b, %h, %row0] into %vb : !t, !smem
    fa.wait_tiles
    fa.store_tile %t, %o[%b, %h, %row0] : vector<16x16xf16>, !t
    fa.store_tile %t, %o[%b, %h, %row0] through %st : !smem : vector<16x16xf16>, !t
    gpu.return
  }
}
