// RUN: fa-opt %s -split-input-file -verify-diagnostics
// One case per verifier rule of the TMA ring type and ops.

// expected-error @+1 {{expects at least 1 stage, got 0}}
func.func private @no_stages(!fa.ring<0, memref<64x64xbf16, #gpu.address_space<workgroup>>>)

// -----

// A 1-D tile is a row ring, of f32 only.
// expected-error @+1 {{expects a 1-D tile (a row ring) of f32, got 'bf16'}}
func.func private @one_d_tile(!fa.ring<2, memref<64xbf16, #gpu.address_space<workgroup>>>)

// -----

// expected-error @+1 {{expects a static 2-D tile or a static 1-D row of f32, got 'memref<2x64x64xbf16, #gpu.address_space<workgroup>>'}}
func.func private @three_d_tile(!fa.ring<2, memref<2x64x64xbf16, #gpu.address_space<workgroup>>>)

// -----

// expected-error @+1 {{expects a static 2-D tile or a static 1-D row of f32, got 'memref<?xf32, #gpu.address_space<workgroup>>'}}
func.func private @dynamic_row(!fa.ring<2, memref<?xf32, #gpu.address_space<workgroup>>>)

// -----

// A row is filled one value per lane of a warp per step.
// expected-error @+1 {{expects a row ring's tile of a multiple of 32 values (one per lane of a warp) and at most 256, got 48}}
func.func private @row_not_warp_multiple(!fa.ring<2, memref<48xf32, #gpu.address_space<workgroup>>>)

// -----

// expected-error @+1 {{expects a row ring's tile of a multiple of 32 values (one per lane of a warp) and at most 256, got 288}}
func.func private @row_too_long(!fa.ring<2, memref<288xf32, #gpu.address_space<workgroup>>>)

// -----

// expected-error @+1 {{expects a tile in the workgroup (shared) address space, got 'memref<64xf32>'}}
func.func private @global_row(!fa.ring<2, memref<64xf32>>)

// -----

// A row ring's buffers are [S, R].
func.func @create_row_wrong_buffers(%buf: memref<2x1x64xf32, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{expects buffers of 2 slots of the ring's tile 'memref<64xf32, #gpu.address_space<workgroup>>', got 'memref<2x1x64xf32, #gpu.address_space<workgroup>>'}}
  %ring = fa.ring_create %buf consumers(128) : memref<2x1x64xf32, #gpu.address_space<workgroup>> -> !fa.ring<2, memref<64xf32, #gpu.address_space<workgroup>>>
  return
}

// -----

// A tile ring's buffers stay rank 3.
func.func @create_tile_rank_two_buffers(%buf: memref<64x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{expects buffers of 2 slots of the ring's tile 'memref<64x64xbf16, #gpu.address_space<workgroup>>', got 'memref<64x64xbf16, #gpu.address_space<workgroup>>'}}
  %ring = fa.ring_create %buf consumers(128) : memref<64x64xbf16, #gpu.address_space<workgroup>> -> !fa.ring<2, memref<64x64xbf16, #gpu.address_space<workgroup>>>
  return
}

// -----

// TMA does not fill a row ring.
!rows = !fa.ring<2, memref<64xf32, #gpu.address_space<workgroup>>>
!map = !nvgpu.tensormap.descriptor<tensor = memref<64x64xf32, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
func.func @produce_row_ring(%ring: !rows, %map: !map, %i: index) {
  // expected-error @+1 {{expects a ring of 2-D tiles (TMA); a row ring is filled by fa.ring_produce_rows}}
  fa.ring_produce %ring[%i] from %map[%i, %i] : !rows, !map
  return
}

// -----

// cp.async rows do not fill a tile ring.
!ring = !fa.ring<2, memref<64x64xbf16, #gpu.address_space<workgroup>>>
func.func @produce_rows_tile_ring(%ring: !ring, %lse: memref<?x?x?xf32>, %i: index) {
  // expected-error @+1 {{expects a row ring (a 1-D f32 tile), got 'memref<64x64xbf16, #gpu.address_space<workgroup>>' (a ring of 2-D tiles is filled by TMA, fa.ring_produce)}}
  fa.ring_produce_rows %ring[%i] from %lse[%i, %i, %i] : !ring, memref<?x?x?xf32>
  return
}

// -----

!rows = !fa.ring<2, memref<64xf32, #gpu.address_space<workgroup>>>
func.func @produce_rows_rank(%ring: !rows, %lse: memref<?x?xf32>, %i: index) {
  // expected-error @+1 {{expects a rank-3 f32 source ([batch, heads, seq]), got 'memref<?x?xf32>'}}
  fa.ring_produce_rows %ring[%i] from %lse[%i, %i, %i] : !rows, memref<?x?xf32>
  return
}

// -----

!rows = !fa.ring<2, memref<64xf32, #gpu.address_space<workgroup>>>
func.func @produce_rows_element(%ring: !rows, %lse: memref<?x?x?xf16>, %i: index) {
  // expected-error @+1 {{expects a rank-3 f32 source ([batch, heads, seq]), got 'memref<?x?x?xf16>'}}
  fa.ring_produce_rows %ring[%i] from %lse[%i, %i, %i] : !rows, memref<?x?x?xf16>
  return
}

// -----

// A row ring's slot is a 1-D view.
!rows = !fa.ring<2, memref<64xf32, #gpu.address_space<workgroup>>>
func.func @consume_row_slot_type(%ring: !rows, %i: index) {
  // expected-error @+1 {{expects the slot type 'memref<64xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>', got 'memref<64xf32, #gpu.address_space<workgroup>>'}}
  %slot = fa.ring_consume %ring[%i] : !rows -> memref<64xf32, #gpu.address_space<workgroup>>
  return
}

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
  // expected-error @+1 {{expects the descriptor's box 'memref<128x64xbf16, #gpu.address_space<workgroup>>' to have the 64 rows of the ring's tile 'memref<64x64xbf16, #gpu.address_space<workgroup>>'}}
  fa.ring_produce %ring[%i] from %map[%i, %i] : !ring, !nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
  return
}

// -----

!ring = !fa.ring<3, memref<64x64xbf16, #gpu.address_space<workgroup>>>
func.func @produce_box_element(%ring: !ring, %map: !nvgpu.tensormap.descriptor<tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>, %i: index) {
  // expected-error @+1 {{expects the descriptor's box 'memref<64x64xf16, #gpu.address_space<workgroup>>' to have the element type of the ring's tile 'memref<64x64xbf16, #gpu.address_space<workgroup>>'}}
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
  // expected-error @+1 {{expects a box row of a multiple of 16 bytes (TMA's unit), got 8}}
  fa.ring_produce %ring[%i] from %map[%i, %i] : !ring, !nvgpu.tensormap.descriptor<tensor = memref<64x4xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
  return
}

// -----

!ring = !fa.ring<2, memref<64x128xbf16, #gpu.address_space<workgroup>>>
func.func @produce_swizzle_span(%ring: !ring, %map: !nvgpu.tensormap.descriptor<tensor = memref<64x128xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, %i: index) {
  // expected-error @+1 {{expects the descriptor's box row (256 bytes) to be the 128-byte span of swizzle_128b (nvgpu.tma.async.load's rule; a wider tile row is loaded as panels of one span each)}}
  fa.ring_produce %ring[%i] from %map[%i, %i] : !ring, !nvgpu.tensormap.descriptor<tensor = memref<64x128xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
  return
}

// -----

// A box row narrower than the span is what TMA allows but nvgpu.tma.async.load does not.
!ring = !fa.ring<2, memref<64x32xbf16, #gpu.address_space<workgroup>>>
!map = !nvgpu.tensormap.descriptor<tensor = memref<64x32xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
func.func @produce_swizzle_narrow(%ring: !ring, %map: !map, %i: index) {
  // expected-error @+1 {{expects the descriptor's box row (64 bytes) to be the 128-byte span of swizzle_128b}}
  fa.ring_produce %ring[%i] from %map[%i, %i] : !ring, !map
  return
}

// -----

!ring = !fa.ring<2, memref<64x64xbf16, #gpu.address_space<workgroup>>>
!map = !nvgpu.tensormap.descriptor<tensor = memref<64xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
func.func @produce_rank_one(%ring: !ring, %map: !map, %i: index) {
  // expected-error @+1 {{expects a descriptor of rank 2 to 5 (TMA), got 1}}
  fa.ring_produce %ring[%i] from %map[%i] : !ring, !map
  return
}

// -----

!ring = !fa.ring<2, memref<64x64xbf16, #gpu.address_space<workgroup>>>
!map = !nvgpu.tensormap.descriptor<tensor = memref<1x1x1x1x64x64xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
func.func @produce_rank_six(%ring: !ring, %map: !map, %i: index) {
  // expected-error @+1 {{expects a descriptor of rank 2 to 5 (TMA), got 6}}
  fa.ring_produce %ring[%i] from %map[%i, %i, %i, %i, %i, %i] : !ring, !map
  return
}

// -----

// Two heads per load would not be one [rows, columns] tile.
!ring = !fa.ring<2, memref<64x64xbf16, #gpu.address_space<workgroup>>>
!map = !nvgpu.tensormap.descriptor<tensor = memref<1x2x64x64xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
func.func @produce_leading_box_dim(%ring: !ring, %map: !map, %i: index) {
  // expected-error @+1 {{expects the descriptor's box 'memref<1x2x64x64xbf16, #gpu.address_space<workgroup>>' to be 1 in every dimension but the last two (one [rows, columns] tile per load)}}
  fa.ring_produce %ring[%i] from %map[%i, %i, %i, %i] : !ring, !map
  return
}

// -----

// Without swizzle one load fills the row-major slot: no panels.
!ring = !fa.ring<2, memref<64x128xbf16, #gpu.address_space<workgroup>>>
!map = !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x64xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
func.func @produce_unswizzled_panels(%ring: !ring, %map: !map, %i: index) {
  // expected-error @+1 {{expects the descriptor's box row of 64 elements to be the ring tile's row of 128 without swizzle (panels are for swizzled tiles)}}
  fa.ring_produce %ring[%i] from %map[%i, %i, %i, %i] : !ring, !map
  return
}

// -----

// 96 bf16 columns are one and a half 128-byte panels.
!ring = !fa.ring<2, memref<64x96xbf16, #gpu.address_space<workgroup>>>
!map = !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
func.func @produce_partial_panel(%ring: !ring, %map: !map, %i: index) {
  // expected-error @+1 {{expects the ring tile's row of 96 elements to be a whole number of panels of the box's 64 columns}}
  fa.ring_produce %ring[%i] from %map[%i, %i, %i, %i] : !ring, !map
  return
}

// -----

// A 4-row panel (512 bytes) is half the 8-row pattern of swizzle_128b: the
// second panel would start mid-pattern.
!ring = !fa.ring<2, memref<4x128xbf16, #gpu.address_space<workgroup>>>
!map = !nvgpu.tensormap.descriptor<tensor = memref<1x1x4x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
func.func @produce_panel_pattern(%ring: !ring, %map: !map, %i: index) {
  // expected-error @+1 {{expects each panel (4 rows of 128 bytes, 512 bytes) to be a whole number of swizzle_128b's 1024-byte pattern, so that every panel starts 1024-byte aligned}}
  fa.ring_produce %ring[%i] from %map[%i, %i, %i, %i] : !ring, !map
  return
}

// -----

// The same under swizzle_64b: 4 rows of 64 bytes are half its 512-byte pattern.
!ring = !fa.ring<2, memref<4x64xbf16, #gpu.address_space<workgroup>>>
!map = !nvgpu.tensormap.descriptor<tensor = memref<1x1x4x32xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_64b, l2promo = none, oob = zero, interleave = none>
func.func @produce_panel_pattern_64b(%ring: !ring, %map: !map, %i: index) {
  // expected-error @+1 {{expects each panel (4 rows of 64 bytes, 256 bytes) to be a whole number of swizzle_64b's 512-byte pattern, so that every panel starts 512-byte aligned}}
  fa.ring_produce %ring[%i] from %map[%i, %i, %i, %i] : !ring, !map
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

// A rank-4 map takes 4 coordinates: batch, head, row, column.
!ring = !fa.ring<2, memref<64x128xbf16, #gpu.address_space<workgroup>>>
!map = !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
func.func @produce_rank_four_coordinates(%ring: !ring, %map: !map, %i: index) {
  // expected-error @+1 {{expects 4 coordinates (one per box dimension), got 2}}
  fa.ring_produce %ring[%i] from %map[%i, %i] : !ring, !map
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
