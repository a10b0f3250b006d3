// RUN: fa-opt %s --convert-fa-to-nvgpu --cse --split-input-file -verify-diagnostics | FileCheck %s

// A 2-stage ring of 64 x 64 bf16 slots on a 128-thread kernel: the ring
// ops become nvgpu mbarrier and TMA ops, each with its slot (i mod 2) and
// round parity ((i / 2) mod 2) written out; the tensor map parameter becomes
// an !llvm.ptr listed (as lowered parameter 7, after the 7 of the memref)
// for --fa-grid-constant-params.

!slots = memref<2x64x64xbf16, #gpu.address_space<workgroup>>
!ring = !fa.ring<2, memref<64x64xbf16, #gpu.address_space<workgroup>>>
!map = !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
!slot = memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
!group = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>

// CHECK-LABEL: gpu.func @ring_ops
// CHECK-SAME: (%[[OUT:.*]]: memref<?x64xbf16>, %[[MAP_PTR:.*]]: !llvm.ptr, %[[P:.*]]: index, %[[C:.*]]: index, %[[ROW:.*]]: index)
// CHECK-SAME: workgroup(%[[BUF:[^ ]*]] : memref<2x64x64xbf16, #gpu.address_space<workgroup>> {llvm.align = 1024 : i64})
// CHECK-SAME: fa.grid_constant_params = array<i64: 7>
// CHECK: %[[MAP:.*]] = builtin.unrealized_conversion_cast %[[MAP_PTR]] : !llvm.ptr to !nvgpu.tensormap.descriptor
// Create: two groups of 2 barriers, initialised by thread 0 for 1 arrival
// (full) and 128 (empty), fenced for the async proxy, then a block barrier.
// CHECK: %[[FULL:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// CHECK: %[[EMPTY:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[TID]], %[[C0:.*]] : index
// CHECK: nvgpu.mbarrier.init %[[FULL]][%[[C0]]], %[[C1:.*]], predicate = %[[FIRST]]
// CHECK: nvgpu.mbarrier.init %[[EMPTY]][%[[C0]]], %[[C128:.*]], predicate = %[[FIRST]]
// CHECK: nvgpu.mbarrier.init %[[FULL]][%[[C1]]], %[[C1]], predicate = %[[FIRST]]
// CHECK: nvgpu.mbarrier.init %[[EMPTY]][%[[C1]]], %[[C128]], predicate = %[[FIRST]]
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: gpu.barrier
// Produce at %p: wait for empty[slot] in the previous round's parity, arm
// full[slot] with 8192 bytes, load the box at (column 0, row %row).
// CHECK: %[[PSLOT:.*]] = arith.remui %[[P]], %[[C2:.*]] : index
// CHECK: %[[PROUND:.*]] = arith.divui %[[P]], %[[C2]] : index
// CHECK: %[[PPAR:.*]] = arith.remui %[[PROUND]], %[[C2]] : index
// CHECK: %[[PBIT:.*]] = arith.index_cast %[[PPAR]] : index to i1
// CHECK: %[[PREV:.*]] = arith.xori %[[PBIT]], %true : i1
// CHECK: nvgpu.mbarrier.try_wait.parity %[[EMPTY]][%[[PSLOT]]], %[[PREV]], %{{.*}}
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[FULL]][%[[PSLOT]]], %c8192
// The destination is the slot's 4096 elements at slot * 4096, in the box's
// shape (as nvgpu.tma.async.load requires).
// CHECK: %[[PSTART:.*]] = arith.muli %[[PSLOT]], %c4096 : index
// CHECK: %[[DST:.*]] = memref.reinterpret_cast %[[BUF]] to offset: [%[[PSTART]]], sizes: [64, 64], strides: [64, 1]
// CHECK-SAME: to memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
// CHECK: nvgpu.tma.async.load %[[MAP]][%[[C0]], %[[ROW]]], %[[FULL]][%[[PSLOT]]] to %[[DST]]
// CHECK-NOT: nvgpu.tma.async.load
// Consume at %c: wait for full[slot] in this round's parity, then the slot.
// CHECK: %[[CSLOT:.*]] = arith.remui %[[C]], %[[C2]] : index
// CHECK: %[[CROUND:.*]] = arith.divui %[[C]], %[[C2]] : index
// CHECK: %[[CPAR:.*]] = arith.remui %[[CROUND]], %[[C2]] : index
// CHECK: %[[CBIT:.*]] = arith.index_cast %[[CPAR]] : index to i1
// CHECK: nvgpu.mbarrier.try_wait.parity %[[FULL]][%[[CSLOT]]], %[[CBIT]], %{{.*}}
// CHECK: %[[SLOT:.*]] = memref.subview %[[BUF]][%[[CSLOT]], 0, 0] [1, 64, 64] [1, 1, 1]
// CHECK: memref.load %[[SLOT]]
// Release at %c: one arrival on empty[slot].
// CHECK: nvgpu.mbarrier.arrive %[[EMPTY]][%[[CSLOT]]]
// CHECK-NOT: fa.ring
gpu.module @kernels {
  gpu.func @ring_ops(%out: memref<?x64xbf16>, %map: !map, %p: index, %c: index, %row: index)
      workgroup(%buffers: !slots {llvm.align = 1024 : i64}) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %ring = fa.ring_create %buffers consumers(128) : !slots -> !ring
    fa.ring_produce %ring[%p] from %map[%row, %c0] : !ring, !map
    %slot = fa.ring_consume %ring[%c] : !ring -> !slot
    %v = memref.load %slot[%c0, %c0] : !slot
    memref.store %v, %out[%c0, %c0] : memref<?x64xbf16>
    fa.ring_release %ring[%c] : !ring
    gpu.return
  }
}

// -----

// A ring carried through a loop is not lowered: its uses must be the ring
// ops themselves.
!slots = memref<2x64x64xbf16, #gpu.address_space<workgroup>>
!ring = !fa.ring<2, memref<64x64xbf16, #gpu.address_space<workgroup>>>
gpu.module @kernels {
  gpu.func @ring_in_loop(%n: index) workgroup(%buffers: !slots {llvm.align = 1024 : i64}) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %ring = fa.ring_create %buffers consumers(128) : !slots -> !ring
    // expected-error @+1 {{'scf.for' op uses a ring, which convert-fa-to-nvgpu lowers only in fa.ring_produce, fa.ring_produce_rows, fa.ring_consume and fa.ring_release}}
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%carried = %ring) -> (!ring) {
      fa.ring_release %carried[%i] : !ring
      scf.yield %carried : !ring
    }
    gpu.return
  }
}

// -----

// Only a kernel takes a tensor map: CUDA passes it by value as a
// __grid_constant__ kernel parameter.
!map = !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
gpu.module @kernels {
  // expected-error @+1 {{'gpu.func' op takes a tensor map, which only a kernel can take (by value, as a __grid_constant__ parameter)}}
  gpu.func @helper(%map: !map)
      attributes {known_block_size = array<i32: 128, 1, 1>, fa.tile = #fa.tile<block_m = 128>} {
    gpu.return
  }
}

// -----

// TMA writes 128-byte-aligned shared addresses: a workgroup attribution
// holding a ring's slots must be aligned so.
!slots = memref<2x64x64xbf16, #gpu.address_space<workgroup>>
!ring = !fa.ring<2, memref<64x64xbf16, #gpu.address_space<workgroup>>>
gpu.module @kernels {
  gpu.func @unaligned_slots() workgroup(%buffers: !slots {llvm.align = 16 : i64}) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>} {
    // expected-error @+1 {{'fa.ring_create' op expects its buffers 128-byte aligned (where TMA writes): give the workgroup attribution llvm.align = 128 or a multiple}}
    %ring = fa.ring_create %buffers consumers(128) : !slots -> !ring
    gpu.return
  }
}

// -----

// K of head %h of batch %b through a rank-4 map of [batch, heads, seq, 128]
// bf16: a 64 x 128 tile is two swizzle_128b panels of 64 x 64 (8192 bytes
// each). One expect_tx of the whole 16384 bytes on full[slot], then two
// loads on it: panel 0 at column %col into the slot's first 4096 elements,
// panel 1 at column %col + 64 into the next 4096, each a [1, 1, 64, 64]
// view (the box's shape); TMA's coordinates are innermost first.
!slots = memref<2x64x128xbf16, #gpu.address_space<workgroup>>
!ring = !fa.ring<2, memref<64x128xbf16, #gpu.address_space<workgroup>>>
!map = !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
// CHECK-LABEL: gpu.func @panels
// CHECK-SAME: (%[[MAP_PTR:.*]]: !llvm.ptr, %[[P:.*]]: index, %[[B:.*]]: index, %[[H:.*]]: index, %[[ROW:.*]]: index, %[[COL:.*]]: index)
// CHECK-SAME: workgroup(%[[BUF:[^ ]*]] : memref<2x64x128xbf16, #gpu.address_space<workgroup>> {llvm.align = 1024 : i64})
// CHECK-SAME: fa.grid_constant_params = array<i64: 0>
// CHECK: %[[MAP:.*]] = builtin.unrealized_conversion_cast %[[MAP_PTR]]
// CHECK: %[[FULL:.*]] = nvgpu.mbarrier.create
// CHECK: %[[EMPTY:.*]] = nvgpu.mbarrier.create
// CHECK: %[[PSLOT:.*]] = arith.remui %[[P]], %[[C2:.*]] : index
// CHECK: nvgpu.mbarrier.try_wait.parity %[[EMPTY]][%[[PSLOT]]]
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[FULL]][%[[PSLOT]]], %c16384
// CHECK-NOT: nvgpu.mbarrier.arrive.expect_tx
// CHECK: %[[START:.*]] = arith.muli %[[PSLOT]], %c8192 : index
// CHECK: %[[DST0:.*]] = memref.reinterpret_cast %[[BUF]] to offset: [%[[START]]], sizes: [1, 1, 64, 64], strides: [4096, 4096, 64, 1]
// CHECK-SAME: to memref<1x1x64x64xbf16, strided<[4096, 4096, 64, 1], offset: ?>, #gpu.address_space<workgroup>>
// CHECK: nvgpu.tma.async.load %[[MAP]][%[[COL]], %[[ROW]], %[[H]], %[[B]]], %[[FULL]][%[[PSLOT]]] to %[[DST0]]
// CHECK: %[[COL1:.*]] = arith.addi %[[COL]], %c64 : index
// CHECK: %[[START1:.*]] = arith.addi %[[START]], %c4096 : index
// CHECK: %[[DST1:.*]] = memref.reinterpret_cast %[[BUF]] to offset: [%[[START1]]], sizes: [1, 1, 64, 64], strides: [4096, 4096, 64, 1]
// CHECK: nvgpu.tma.async.load %[[MAP]][%[[COL1]], %[[ROW]], %[[H]], %[[B]]], %[[FULL]][%[[PSLOT]]] to %[[DST1]]
// CHECK-NOT: nvgpu.tma.async.load
// CHECK: gpu.return
gpu.module @kernels {
  gpu.func @panels(%map: !map, %p: index, %b: index, %h: index, %row: index, %col: index)
      workgroup(%buffers: !slots {llvm.align = 1024 : i64}) kernel
      attributes {known_block_size = array<i32: 160, 1, 1>} {
    %ring = fa.ring_create %buffers consumers(128) : !slots -> !ring
    fa.ring_produce %ring[%p] from %map[%b, %h, %row, %col] : !ring, !map
    gpu.return
  }
}

// -----

// A 64 x 256 f16 tile under swizzle_64b (32-column panels): 8 loads, the
// last at column + 224 into elements slot * 16384 + 14336.
!slots = memref<1x64x256xf16, #gpu.address_space<workgroup>>
!ring = !fa.ring<1, memref<64x256xf16, #gpu.address_space<workgroup>>>
!map = !nvgpu.tensormap.descriptor<tensor = memref<1x64x32xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_64b, l2promo = none, oob = zero, interleave = none>
// CHECK-LABEL: gpu.func @panels_64b
// CHECK: nvgpu.mbarrier.arrive.expect_tx %{{.*}}, %c32768
// CHECK-COUNT-7: nvgpu.tma.async.load
// CHECK: %[[LAST_COL:.*]] = arith.addi %{{.*}}, %c224 : index
// CHECK: %[[LAST:.*]] = arith.addi %{{.*}}, %c14336 : index
// CHECK: memref.reinterpret_cast %{{.*}} to offset: [%[[LAST]]], sizes: [1, 64, 32], strides: [2048, 32, 1]
// CHECK: nvgpu.tma.async.load %{{.*}}[%[[LAST_COL]], %{{.*}}, %{{.*}}]
// CHECK-NOT: nvgpu.tma.async.load
gpu.module @kernels {
  gpu.func @panels_64b(%map: !map, %p: index, %h: index, %row: index)
      workgroup(%buffers: !slots {llvm.align = 512 : i64}) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %ring = fa.ring_create %buffers consumers(128) : !slots -> !ring
    fa.ring_produce %ring[%p] from %map[%h, %row, %c0] : !ring, !map
    gpu.return
  }
}

// -----

// A swizzle_128b panel starts where the 1024-byte pattern does: 128-byte
// alignment is not enough for the slots of a swizzled ring.
!slots = memref<2x64x128xbf16, #gpu.address_space<workgroup>>
!ring = !fa.ring<2, memref<64x128xbf16, #gpu.address_space<workgroup>>>
!map = !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
gpu.module @kernels {
  gpu.func @panels_unaligned(%map: !map, %p: index, %b: index, %h: index, %row: index, %col: index)
      workgroup(%buffers: !slots {llvm.align = 128 : i64}) kernel
      attributes {known_block_size = array<i32: 160, 1, 1>} {
    // expected-error @+1 {{'fa.ring_create' op expects its buffers 1024-byte aligned (where TMA writes, each slot starting a swizzle_128b pattern): give the workgroup attribution llvm.align = 1024 or a multiple}}
    %ring = fa.ring_create %buffers consumers(128) : !slots -> !ring
    // expected-note @+1 {{the swizzled load that needs it}}
    fa.ring_produce %ring[%p] from %map[%b, %h, %row, %col] : !ring, !map
    gpu.return
  }
}

// -----

// A row ring (2 slots of 64 f32: a query tile's log-sum-exp) beside a tile
// ring: the row ring's full barriers wait for 32 arrivals (each lane's
// cp.async.mbarrier.arrive.noinc), the tile ring's for 1 (expect_tx). The
// row ring's buffers need no llvm.align: no TMA writes them.
// Produce rows at %p: every lane waits for empty[slot] in the previous
// round's parity, then copies values lane and lane + 32 of the slot, 4
// bytes each, from lse[%b, %h, %row + e] clamped to seq - 1, reading
// nothing (zeros) where %row + e >= seq; then full[slot] tracks the copies.
!tiles = memref<2x64x64xbf16, #gpu.address_space<workgroup>>
!ring = !fa.ring<2, memref<64x64xbf16, #gpu.address_space<workgroup>>>
!rbuf = memref<2x64xf32, #gpu.address_space<workgroup>>
!rows = !fa.ring<2, memref<64xf32, #gpu.address_space<workgroup>>>
!rslot = memref<64xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>
// CHECK-LABEL: gpu.func @row_ring
// CHECK-SAME: (%[[LSE:.*]]: memref<?x?x?xf32>, %[[OUT:.*]]: memref<?xf32>, %[[P:.*]]: index, %[[C:.*]]: index, %[[B:.*]]: index, %[[H:.*]]: index, %[[ROW:.*]]: index)
// CHECK-SAME: workgroup(%[[TBUF:[^ ]*]] : memref<2x64x64xbf16, #gpu.address_space<workgroup>> {llvm.align = 128 : i64}, %[[RBUF:[^ ]*]] : memref<2x64xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[TFULL:.*]] = nvgpu.mbarrier.create
// CHECK: %[[TEMPTY:.*]] = nvgpu.mbarrier.create
// CHECK: nvgpu.mbarrier.init %[[TFULL]][%[[C0:.*]]], %[[C1:.*]], predicate
// CHECK: nvgpu.mbarrier.init %[[TFULL]][%[[C1]]], %[[C1]], predicate
// CHECK: %[[RFULL:.*]] = nvgpu.mbarrier.create
// CHECK: %[[REMPTY:.*]] = nvgpu.mbarrier.create
// CHECK: nvgpu.mbarrier.init %[[RFULL]][%[[C0]]], %c32, predicate
// CHECK: nvgpu.mbarrier.init %[[REMPTY]][%[[C0]]], %c128, predicate
// CHECK: nvgpu.mbarrier.init %[[RFULL]][%[[C1]]], %c32, predicate
// CHECK: nvgpu.mbarrier.init %[[REMPTY]][%[[C1]]], %c128, predicate
// CHECK: gpu.barrier
// CHECK: %[[PSLOT:.*]] = arith.remui %[[P]], %[[C2:.*]] : index
// CHECK: %[[PROUND:.*]] = arith.divui %[[P]], %[[C2]] : index
// CHECK: %[[PPAR:.*]] = arith.remui %[[PROUND]], %[[C2]] : index
// CHECK: %[[PBIT:.*]] = arith.index_cast %[[PPAR]] : index to i1
// CHECK: %[[PREV:.*]] = arith.xori %[[PBIT]], %true : i1
// CHECK: nvgpu.mbarrier.try_wait.parity %[[REMPTY]][%[[PSLOT]]], %[[PREV]], %{{.*}}
// Positions are 32-bit (the producer warp's few registers), the clamped
// one widened back for the copy's index.
// CHECK: %[[DIM:.*]] = memref.dim %[[LSE]], %[[C2]] : memref<?x?x?xf32>
// CHECK: %[[SEQ:.*]] = arith.index_castui %[[DIM]] : index to i32
// CHECK: %[[LAST:.*]] = arith.subi %[[SEQ]], %c1_i32 : i32
// CHECK: %[[ROW32:.*]] = arith.index_castui %[[ROW]] : index to i32
// CHECK: %[[LANE:.*]] = gpu.lane_id
// CHECK: %[[LANE32:.*]] = arith.index_castui %[[LANE]] : index to i32
// CHECK: %[[POS0:.*]] = arith.addi %[[ROW32]], %[[LANE32]] : i32
// CHECK: %[[IN0:.*]] = arith.cmpi ult, %[[POS0]], %[[SEQ]] : i32
// CHECK: %[[MIN0:.*]] = arith.minui %[[POS0]], %[[LAST]] : i32
// CHECK: %[[SRC0:.*]] = arith.index_castui %[[MIN0]] : i32 to index
// CHECK: %[[N0:.*]] = arith.select %[[IN0]], %[[C1]], %[[C0]] : index
// CHECK: nvgpu.device_async_copy %[[LSE]][%[[B]], %[[H]], %[[SRC0]]], %[[RBUF]][%[[PSLOT]], %[[LANE]]], 1, %[[N0]] : memref<?x?x?xf32> to memref<2x64xf32, #gpu.address_space<workgroup>>
// CHECK: %[[E1:.*]] = arith.addi %[[LANE]], %c32 : index
// CHECK: %[[E1_32:.*]] = arith.index_castui %[[E1]] : index to i32
// CHECK: %[[POS1:.*]] = arith.addi %[[ROW32]], %[[E1_32]] : i32
// CHECK: %[[IN1:.*]] = arith.cmpi ult, %[[POS1]], %[[SEQ]] : i32
// CHECK: %[[MIN1:.*]] = arith.minui %[[POS1]], %[[LAST]] : i32
// CHECK: %[[SRC1:.*]] = arith.index_castui %[[MIN1]] : i32 to index
// CHECK: %[[N1:.*]] = arith.select %[[IN1]], %[[C1]], %[[C0]] : index
// CHECK: nvgpu.device_async_copy %[[LSE]][%[[B]], %[[H]], %[[SRC1]]], %[[RBUF]][%[[PSLOT]], %[[E1]]], 1, %[[N1]]
// CHECK-NOT: nvgpu.device_async_copy
// CHECK-NOT: expect_tx
// CHECK: %[[FULL_ADDR:.*]] = nvgpu.mbarrier.get %[[RFULL]][%[[PSLOT]]] : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2> -> i64
// CHECK: %[[FULL_PTR:.*]] = llvm.inttoptr %[[FULL_ADDR]] : i64 to !llvm.ptr<3>
// CHECK: nvvm.cp.async.mbarrier.arrive %[[FULL_PTR]] {noinc = true} : !llvm.ptr<3>
// Consume and release as a tile ring's, on the 1-D slot.
// CHECK: %[[CSLOT:.*]] = arith.remui %[[C]], %[[C2]] : index
// CHECK: nvgpu.mbarrier.try_wait.parity %[[RFULL]][%[[CSLOT]]]
// CHECK: %[[SLOT:.*]] = memref.subview %[[RBUF]][%[[CSLOT]], 0] [1, 64] [1, 1] : memref<2x64xf32, #gpu.address_space<workgroup>> to memref<64xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>
// CHECK: memref.load %[[SLOT]]
// CHECK: nvgpu.mbarrier.arrive %[[REMPTY]][%[[CSLOT]]]
// CHECK-NOT: fa.ring
gpu.module @kernels {
  gpu.func @row_ring(%lse: memref<?x?x?xf32>, %out: memref<?xf32>, %p: index, %c: index, %b: index, %h: index, %row: index)
      workgroup(%tiles: !tiles {llvm.align = 128 : i64}, %buffers: !rbuf) kernel
      attributes {known_block_size = array<i32: 160, 1, 1>} {
    %c0 = arith.constant 0 : index
    %tring = fa.ring_create %tiles consumers(128) : !tiles -> !ring
    %ring = fa.ring_create %buffers consumers(128) : !rbuf -> !rows
    fa.ring_produce_rows %ring[%p] from %lse[%b, %h, %row] : !rows, memref<?x?x?xf32>
    %slot = fa.ring_consume %ring[%c] : !rows -> !rslot
    %v = memref.load %slot[%c0] : !rslot
    memref.store %v, %out[%c0] : memref<?xf32>
    fa.ring_release %ring[%c] : !rows
    gpu.return
  }
}

// -----

// A strided source (the innermost stride dynamic, which cp.async's
// nvgpu op refuses to index): each value is copied from a one-element view
// at offset + b * s0 + h * s1 + position * s2 of the base buffer.
!rbuf = memref<2x64xf32, #gpu.address_space<workgroup>>
!rows = !fa.ring<2, memref<64xf32, #gpu.address_space<workgroup>>>
!view = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
// CHECK-LABEL: gpu.func @row_ring_view
// CHECK-SAME: (%[[LSE:.*]]: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %[[P:.*]]: index, %[[B:.*]]: index, %[[H:.*]]: index, %[[ROW:.*]]: index)
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}:3, %[[STRIDES:.*]]:3 = memref.extract_strided_metadata %[[LSE]]
// CHECK: %[[HOFF:.*]] = arith.muli %[[H]], %[[STRIDES]]#1 : index
// CHECK: %[[BOFF:.*]] = arith.muli %[[B]], %[[STRIDES]]#0 : index
// CHECK: %[[BH:.*]] = arith.addi %[[BOFF]], %[[HOFF]] : index
// CHECK: %[[START:.*]] = arith.addi %[[OFF]], %[[BH]] : index
// CHECK: %[[MIN0:.*]] = arith.minui
// CHECK: %[[SRC0:.*]] = arith.index_castui %[[MIN0]] : i32 to index
// CHECK: %[[STEP0:.*]] = arith.muli %[[SRC0]], %[[STRIDES]]#2 : index
// CHECK: %[[AT0:.*]] = arith.addi %[[START]], %[[STEP0]] : index
// CHECK: %[[ONE0:.*]] = memref.reinterpret_cast %[[BASE]] to offset: [%[[AT0]]], sizes: [1], strides: [1] : memref<f32> to memref<1xf32, strided<[1], offset: ?>>
// CHECK: nvgpu.device_async_copy %[[ONE0]][%{{.*}}], %{{.*}}, 1, %{{.*}} : memref<1xf32, strided<[1], offset: ?>> to memref<2x64xf32, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true}
gpu.module @kernels {
  gpu.func @row_ring_view(%lse: !view, %p: index, %b: index, %h: index, %row: index)
      workgroup(%buffers: !rbuf) kernel
      attributes {known_block_size = array<i32: 160, 1, 1>} {
    %ring = fa.ring_create %buffers consumers(128) : !rbuf -> !rows
    fa.ring_produce_rows %ring[%p] from %lse[%b, %h, %row] : !rows, !view
    gpu.return
  }
}
