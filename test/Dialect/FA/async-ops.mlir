// RUN: fa-opt %s | fa-opt | FileCheck %s
// The TMA ring ops print and parse back: a 3-stage ring of 64 x 64 bf16
// slots, filled through a tensor map, consumed and released per iteration.

!slot = memref<64x64xbf16, #gpu.address_space<workgroup>>
!ring = !fa.ring<3, memref<64x64xbf16, #gpu.address_space<workgroup>>>
!map = !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>

// CHECK-LABEL: func @ring_round_trip
// CHECK-SAME: (%[[BUF:.*]]: memref<3x64x64xbf16, #gpu.address_space<workgroup>>, %[[MAP:.*]]: !nvgpu.tensormap.descriptor<{{.*}}>, %[[I:.*]]: index)
func.func @ring_round_trip(%buf: memref<3x64x64xbf16, #gpu.address_space<workgroup>>, %map: !map, %i: index) {
  %c0 = arith.constant 0 : index
  // CHECK: %[[RING:.*]] = fa.ring_create %[[BUF]] consumers(128) : memref<3x64x64xbf16, #gpu.address_space<workgroup>> -> !fa.ring<3, memref<64x64xbf16, #gpu.address_space<workgroup>>>
  %ring = fa.ring_create %buf consumers(128) : memref<3x64x64xbf16, #gpu.address_space<workgroup>> -> !ring
  // CHECK: fa.ring_produce %[[RING]][%[[I]]] from %[[MAP]][%[[I]], %{{.*}}] : !fa.ring<3, memref<64x64xbf16, #gpu.address_space<workgroup>>>, !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
  fa.ring_produce %ring[%i] from %map[%i, %c0] : !ring, !map
  // CHECK: %{{.*}} = fa.ring_consume %[[RING]][%[[I]]] : !fa.ring<3, memref<64x64xbf16, #gpu.address_space<workgroup>>> -> memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
  %slot = fa.ring_consume %ring[%i] : !ring -> memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
  // CHECK: fa.ring_release %[[RING]][%[[I]]] : !fa.ring<3, memref<64x64xbf16, #gpu.address_space<workgroup>>>
  fa.ring_release %ring[%i] : !ring
  return
}

// A row ring: 2 slots of 64 f32 values (a query tile's log-sum-exp),
// filled by one warp from a [batch, heads, seq] buffer (contiguous or a
// strided view), consumed as a 1-D slot that fa.column_broadcast_shared
// reads.
!rows = !fa.ring<2, memref<64xf32, #gpu.address_space<workgroup>>>
!row_slot = memref<64xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>
// CHECK-LABEL: func @row_ring_round_trip
// CHECK-SAME: (%[[RBUF:.*]]: memref<2x64xf32, #gpu.address_space<workgroup>>, %[[LSE:.*]]: memref<?x?x?xf32>, %[[VIEW:.*]]: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %[[J:.*]]: index, %[[B:.*]]: index, %[[H:.*]]: index, %[[ROW:.*]]: index)
// CHECK: %[[RRING:.*]] = fa.ring_create %[[RBUF]] consumers(256) : memref<2x64xf32, #gpu.address_space<workgroup>> -> !fa.ring<2, memref<64xf32, #gpu.address_space<workgroup>>>
// CHECK: fa.ring_produce_rows %[[RRING]][%[[J]]] from %[[LSE]][%[[B]], %[[H]], %[[ROW]]] : !fa.ring<2, memref<64xf32, #gpu.address_space<workgroup>>>, memref<?x?x?xf32>
// CHECK: fa.ring_produce_rows %[[RRING]][%[[J]]] from %[[VIEW]][%[[B]], %[[H]], %[[ROW]]] : !fa.ring<2, memref<64xf32, #gpu.address_space<workgroup>>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
// CHECK: %[[RSLOT:.*]] = fa.ring_consume %[[RRING]][%[[J]]] : !fa.ring<2, memref<64xf32, #gpu.address_space<workgroup>>> -> memref<64xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>
// CHECK: fa.column_broadcast_shared %[[RSLOT]] : memref<64xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>> -> vector<128x64xf32>
// CHECK: fa.ring_release %[[RRING]][%[[J]]] : !fa.ring<2, memref<64xf32, #gpu.address_space<workgroup>>>
func.func @row_ring_round_trip(%buf: memref<2x64xf32, #gpu.address_space<workgroup>>, %lse: memref<?x?x?xf32>, %view: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %j: index, %b: index, %h: index, %row: index) -> vector<128x64xf32> {
  %ring = fa.ring_create %buf consumers(256) : memref<2x64xf32, #gpu.address_space<workgroup>> -> !rows
  fa.ring_produce_rows %ring[%j] from %lse[%b, %h, %row] : !rows, memref<?x?x?xf32>
  fa.ring_produce_rows %ring[%j] from %view[%b, %h, %row] : !rows, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %slot = fa.ring_consume %ring[%j] : !rows -> !row_slot
  %lse_tile = fa.column_broadcast_shared %slot : !row_slot -> vector<128x64xf32>
  fa.ring_release %ring[%j] : !rows
  return %lse_tile : vector<128x64xf32>
}

// The longest row ring: 256 values.
// CHECK: func.func private @row_ring_256(!fa.ring<4, memref<256xf32, #gpu.address_space<workgroup>>>)
func.func private @row_ring_256(!fa.ring<4, memref<256xf32, #gpu.address_space<workgroup>>>)

// A single-stage ring of f32 rows is a ring too.
// CHECK-LABEL: func @one_stage_f32
// CHECK: fa.ring_create %{{.*}} consumers(1) : memref<1x16x32xf32, #gpu.address_space<workgroup>> -> !fa.ring<1, memref<16x32xf32, #gpu.address_space<workgroup>>>
func.func @one_stage_f32(%buf: memref<1x16x32xf32, #gpu.address_space<workgroup>>) {
  %ring = fa.ring_create %buf consumers(1) : memref<1x16x32xf32, #gpu.address_space<workgroup>> -> !fa.ring<1, memref<16x32xf32, #gpu.address_space<workgroup>>>
  return
}

// K of head %h of batch %b through a rank-4 map of [batch, heads, seq, 128]:
// a 64 x 128 bf16 tile in two 128-byte swizzled panels, box [1, 1, 64, 64].
// CHECK-LABEL: func @rank_four_panels
// CHECK-SAME: (%[[PBUF:.*]]: memref<2x64x128xbf16, #gpu.address_space<workgroup>>, %[[PMAP:.*]]: !nvgpu.tensormap.descriptor<{{.*}}>, %[[B:.*]]: index, %[[H:.*]]: index, %[[ROW:.*]]: index, %[[J:.*]]: index)
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[PRING:.*]] = fa.ring_create %[[PBUF]] consumers(256) : memref<2x64x128xbf16, #gpu.address_space<workgroup>> -> !fa.ring<2, memref<64x128xbf16, #gpu.address_space<workgroup>>>
// CHECK: fa.ring_produce %[[PRING]][%[[J]]] from %[[PMAP]][%[[B]], %[[H]], %[[ROW]], %[[C0]]] : !fa.ring<2, memref<64x128xbf16, #gpu.address_space<workgroup>>>, !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
// CHECK: fa.ring_consume %[[PRING]][%[[J]]] : !fa.ring<2, memref<64x128xbf16, #gpu.address_space<workgroup>>> -> memref<64x128xbf16, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>
func.func @rank_four_panels(%buf: memref<2x64x128xbf16, #gpu.address_space<workgroup>>,
    %map: !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>,
    %b: index, %h: index, %row: index, %j: index) {
  %c0 = arith.constant 0 : index
  %ring = fa.ring_create %buf consumers(256) : memref<2x64x128xbf16, #gpu.address_space<workgroup>> -> !fa.ring<2, memref<64x128xbf16, #gpu.address_space<workgroup>>>
  fa.ring_produce %ring[%j] from %map[%b, %h, %row, %c0] : !fa.ring<2, memref<64x128xbf16, #gpu.address_space<workgroup>>>, !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
  %slot = fa.ring_consume %ring[%j] : !fa.ring<2, memref<64x128xbf16, #gpu.address_space<workgroup>>> -> memref<64x128xbf16, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>
  fa.ring_release %ring[%j] : !fa.ring<2, memref<64x128xbf16, #gpu.address_space<workgroup>>>
  return
}
