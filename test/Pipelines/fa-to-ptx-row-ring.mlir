// A row ring through fa-to-ptx: one warp fills a slot of 64 f32 values
// (a query tile's log-sum-exp, seq of any length) with 4-byte cp.async
// that read nothing past seq (zero fill), and the slot's full barrier,
// initialised for 32 arrivals, tracks each lane's copies through
// cp.async.mbarrier.arrive.noinc; consumers wait on it and read the slot.
// RUN: fa-opt %s --fa-to-ptx -o %t.mlir
// RUN: python3 %fa_src_root/test/runtime/fixtures/extract_ptx.py %t.mlir %t.ptx
// RUN: FileCheck %s < %t.ptx

// CHECK-LABEL: .visible .entry row_ring(
// Full barriers (__mbarrier) for 32 arrivals, empty ones for 128.
// CHECK: mov.b64 [[FULL:%rd[0-9]+]], __mbarrier;
// CHECK: mov.b32 [[LANES:%r[0-9]+]], 32;
// CHECK: @{{%p[0-9]+}} mbarrier.init.shared.b64 [{{%r[0-9]+}}], [[LANES]];
// CHECK: mov.b32 [[CONSUMERS:%r[0-9]+]], 128;
// CHECK: @{{%p[0-9]+}} mbarrier.init.shared.b64 [{{%r[0-9]+}}], [[CONSUMERS]];
// CHECK: bar.sync 0;
// The producing lane waits for the slot's release.
// CHECK: mbarrier.try_wait.parity.shared.b64
// Two values per lane: lane and lane + 32 (128 bytes on), 4 bytes each,
// of which 0 are read past seq.
// CHECK: mov.u32 {{%r[0-9]+}}, %laneid;
// CHECK: selp.b32 [[N0:%r[0-9]+]], 4, 0, {{%p[0-9]+}};
// CHECK-NEXT: cp.async.ca.shared.global [[[DST:%rd[0-9]+]]], [{{%rd[0-9]+}}], 4, [[N0]];
// CHECK: selp.b32 [[N1:%r[0-9]+]], 4, 0, {{%p[0-9]+}};
// CHECK-NEXT: cp.async.ca.shared.global [[[DST]]+128], [{{%rd[0-9]+}}], 4, [[N1]];
// CHECK-NOT: cp.async.ca
// CHECK-NOT: mbarrier.arrive.expect_tx
// The full barrier of the slot tracks the lane's copies.
// CHECK: add.s64 [[FULL_SLOT:%rd[0-9]+]], [[FULL]], {{%rd[0-9]+}};
// CHECK-NEXT: cp.async.mbarrier.arrive.noinc.shared.b64 [[[FULL_SLOT]]];
// The consumer: wait, read, release.
// CHECK: mbarrier.try_wait.parity.shared.b64
// CHECK: ld.shared.b32
// CHECK: mbarrier.arrive.shared.b64
// CHECK: ret;
!rbuf = memref<2x64xf32, #gpu.address_space<workgroup>>
!rows = !fa.ring<2, memref<64xf32, #gpu.address_space<workgroup>>>
!rslot = memref<64xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>
module attributes {gpu.container_module} {
gpu.module @kernels {
  gpu.func @row_ring(%lse: memref<?x?x?xf32>, %out: memref<?xf32>, %p: index, %c: index, %b: index, %h: index, %row: index)
      workgroup(%buffers: !rbuf) kernel
      attributes {known_block_size = array<i32: 160, 1, 1>} {
    %c0 = arith.constant 0 : index
    %ring = fa.ring_create %buffers consumers(128) : !rbuf -> !rows
    fa.ring_produce_rows %ring[%p] from %lse[%b, %h, %row] : !rows, memref<?x?x?xf32>
    %slot = fa.ring_consume %ring[%c] : !rows -> !rslot
    %v = memref.load %slot[%c0] : !rslot
    memref.store %v, %out[%c0] : memref<?xf32>
    fa.ring_release %ring[%c] : !rows
    gpu.return
  }
}
}
