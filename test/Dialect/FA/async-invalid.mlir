// RUN: fa-opt %s -split-input-file -verify-diagnostics
// One case per verifier rule of the TMA ring type and ops.

// expected-error @+1 {{expects at least 1 stage, got 0}}
func.func private @no_stages(!fa.ring<0, memref<64x64xbf16, #gpu.address_space<workgroup>>>)

// -----

// expected-error @+1 {{expects a static 2-D tile, got 'memref<64xbf16, #gpu.address_space<workgroup>>'}}
func.func private @one_d_tile(!fa.ring<2, memref<64xbf16, #gpu.address_space<workgroup>>>)

// -----

// expected-error @+1 {{expects a tile of f16, bf16 or f32, got 'i8'}}
func.func private @int_tile(!fa.ring<2, memref<64x64xi8, #gpu.address_space<workgroup>>>)

// -----

// expected-error @+1 {{expects a tile in the workgroup (shared) address space, got 'memref<64x64xbf16>'}}
func.func private @global_tile(!fa.ring<2, memref<64x64xbf16>>)

// -----

// 8 stages of 256 x 64 bf16 (32 KiB each) do not fit 227 KiB.
// expected-error @+1 {{expects 8 stages of 32768 bytes and their mbarriers (262272 bytes) to fit the 232448 bytes of shared memory of a block}}
func.func private @too_big(!fa.ring<8, memref<256x64xbf16, #gpu.address_space<workgroup>>>)

// -----

func.func @create_wrong_slots(%buf: memref<2x64x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{expects buffers of 3 slots of the ring's tile 'memref<64x64xbf16, #gpu.address_space<workgroup>>', got 'memref<2x64x64xbf16, #gpu.address_space<workgroup>>'}}
  %ring = fa.ring_create %buf consumers(128) : memref<2x64x64xbf16, #gpu.address_space<workgroup>> -> !fa.ring<3, memref<64x64xbf16, #gpu.address_space<workgroup>>>
  return
}

// -----

func.func @create_global_buffers(%buf: memref<3x64x64xbf16>) {
  // expected-error @+1 {{expects buffers in the workgroup (shared) address space}}
  %ring = fa.ring_create %buf consumers(128) : memref<3x64x64xbf16> -> !fa.ring<3, memref<64x64xbf16, #gpu.address_space<workgroup>>>
  return
}

// -----

func.func @create_strided_buffers(%buf: memref<3x64x64xbf16, strided<[8192, 128, 1]>, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{expects buffers with the identity (row-major) layout}}
  %ring = fa.ring_create %buf consumers(128) : memref<3x64x64xbf16, strided<[8192, 128, 1]>, #gpu.address_space<workgroup>> -> !fa.ring<3, memref<64x64xbf16, #gpu.address_space<workgroup>>>
  return
}

// -----

func.func @create_no_consumers(%buf: memref<3x64x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{attribute 'consumers' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %ring = fa.ring_create %buf consumers(0) : memref<3x64x64xbf16, #gpu.address_space<workgroup>> -> !fa.ring<3, memref<64x64xbf16, #gpu.address_space<workgroup>>>
  return
}

// -----

!ring = !fa.ring<3, memref<64x64xbf16, #gpu.address_space<workgroup>>>
func.func @produce_box_shape(%ring: !ring, %map: !nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>, %i: index) {
  // expected-error @+1 {{expects the descriptor's box 'memref<128x64xbf16, #gpu.address_space<workgroup>>' to have the shape and element type of the ring's tile 'memref<64x64xbf16, #gpu.address_space<workgroup>>'}}
  fa.ring_produce %ring[%i] from %map[%i, %i] : !ring, !nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
  return
}

// -----

!ring = !fa.ring<3, memref<64x64xbf16, #gpu.address_space<workgroup>>>
func.func @produce_box_element(%ring: !ring, %map: !nvgpu.tensormap.descriptor<tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>, %i: index) {
  // expected-error @+1 {{expects the descriptor's box 'memref<64x64xf16, #gpu.address_space<workgroup>>' to have the shape and element type}}
  fa.ring_produce %ring[%i] from %map[%i, %i] : !ring, !nvgpu.tensormap.descriptor<tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
  return
}

// -----

!ring = !fa.ring<1, memref<300x16xbf16, #gpu.address_space<workgroup>>>
func.func @produce_box_too_long(%ring: !ring, %map: !nvgpu.tensormap.descriptor<tensor = memref<300x16xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>, %i: index) {
  // expected-error @+1 {{expects box dimensions of at most 256 elements (TMA), got 300}}
  fa.ring_produce %ring[%i] from %map[%i, %i] : !ring, !nvgpu.tensormap.descriptor<tensor = memref<300x16xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
  return
}

// -----

!ring = !fa.ring<2, memref<64x4xbf16, #gpu.address_space<workgroup>>>
func.func @produce_row_granule(%ring: !ring, %map: !nvgpu.tensormap.descriptor<tensor = memref<64x4xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>, %i: index) {
  // expected-error @+1 {{expects a tile row of a multiple of 16 bytes (TMA's unit), got 8}}
  fa.ring_produce %ring[%i] from %map[%i, %i] : !ring, !nvgpu.tensormap.descriptor<tensor = memref<64x4xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
  return
}

// -----

!ring = !fa.ring<2, memref<64x128xbf16, #gpu.address_space<workgroup>>>
func.func @produce_swizzle_span(%ring: !ring, %map: !nvgpu.tensormap.descriptor<tensor = memref<64x128xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, %i: index) {
  // expected-error @+1 {{expects a tile row of at most 128 bytes under swizzle_128b, got 256}}
  fa.ring_produce %ring[%i] from %map[%i, %i] : !ring, !nvgpu.tensormap.descriptor<tensor = memref<64x128xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
  return
}

// -----

!ring = !fa.ring<2, memref<64x64xbf16, #gpu.address_space<workgroup>>>
func.func @produce_nan_fill(%ring: !ring, %map: !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = nan, interleave = none>, %i: index) {
  // expected-error @+1 {{expects a descriptor with oob = zero: rows past the tensor's end must arrive as zeros}}
  fa.ring_produce %ring[%i] from %map[%i, %i] : !ring, !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = nan, interleave = none>
  return
}

// -----

!ring = !fa.ring<2, memref<64x64xbf16, #gpu.address_space<workgroup>>>
func.func @produce_interleave(%ring: !ring, %map: !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = interleave_16b>, %i: index) {
  // expected-error @+1 {{expects a descriptor with interleave = none}}
  fa.ring_produce %ring[%i] from %map[%i, %i] : !ring, !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = interleave_16b>
  return
}

// -----

!ring = !fa.ring<2, memref<64x64xbf16, #gpu.address_space<workgroup>>>
func.func @produce_coordinates(%ring: !ring, %map: !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>, %i: index) {
  // expected-error @+1 {{expects 2 coordinates (one per box dimension), got 1}}
  fa.ring_produce %ring[%i] from %map[%i] : !ring, !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
  return
}

// -----

!ring = !fa.ring<2, memref<64x64xbf16, #gpu.address_space<workgroup>>>
func.func @produce_not_a_map(%ring: !ring, %map: memref<64x64xbf16>, %i: index) {
  // expected-error @+1 {{operand #2 must be a TMA tensor map (!nvgpu.tensormap.descriptor)}}
  "fa.ring_produce"(%ring, %i, %map, %i, %i) : (!ring, index, memref<64x64xbf16>, index, index) -> ()
  return
}

// -----

!ring = !fa.ring<2, memref<64x64xbf16, #gpu.address_space<workgroup>>>
func.func @consume_slot_type(%ring: !ring, %i: index) {
  // expected-error @+1 {{expects the slot type 'memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>', got 'memref<64x64xbf16, #gpu.address_space<workgroup>>'}}
  %slot = fa.ring_consume %ring[%i] : !ring -> memref<64x64xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

// 8 x 4 bf16 is 64 bytes: the second slot would not be 128-byte aligned.
// expected-error @+1 {{expects a tile of a multiple of 128 bytes, so that every slot is aligned for TMA, got 64}}
func.func private @small_slots(!fa.ring<2, memref<8x4xbf16, #gpu.address_space<workgroup>>>)
