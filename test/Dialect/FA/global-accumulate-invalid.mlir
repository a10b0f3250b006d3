// RUN: fa-opt %s -split-input-file -verify-diagnostics
// One case per verifier rule of fa.accumulate_tile, fa.ordered_wait and
// fa.ordered_signal (types included).

func.func @accumulate_bf16_tile(%v: vector<64x64xbf16>, %acc: memref<?x?x?x64xf32>, %i: index) {
  // expected-error @+1 {{operand #0 must be vector of 32-bit float values of ranks 2, but got 'vector<64x64xbf16>'}}
  fa.accumulate_tile %v, %acc[%i, %i, %i] : vector<64x64xbf16>, memref<?x?x?x64xf32>
  return
}

// -----

func.func @accumulate_into_bf16(%v: vector<64x64xf32>, %acc: memref<?x?x?x64xbf16>, %i: index) {
  // expected-error @+1 {{operand #1 must be 4D memref of 32-bit float values}}
  fa.accumulate_tile %v, %acc[%i, %i, %i] : vector<64x64xf32>, memref<?x?x?x64xbf16>
  return
}

// -----

func.func @accumulate_into_3d(%v: vector<64x64xf32>, %acc: memref<?x?x64xf32>, %i: index) {
  // expected-error @+1 {{operand #1 must be 4D memref of 32-bit float values}}
  fa.accumulate_tile %v, %acc[%i, %i, %i] : vector<64x64xf32>, memref<?x?x64xf32>
  return
}

// -----

func.func @accumulate_wrong_head_dim(%v: vector<64x64xf32>, %acc: memref<?x?x?x128xf32>, %i: index) {
  // expected-error @+1 {{expects value to have 128 columns (accum's head_dim), got 64}}
  fa.accumulate_tile %v, %acc[%i, %i, %i] : vector<64x64xf32>, memref<?x?x?x128xf32>
  return
}

// -----

// Transposed, head_dim runs down the tile: its 64 rows must be accum's
// head_dim (its 128 columns are queries).
func.func @accumulate_transposed_wrong_head_dim(%v: vector<64x128xf32>, %acc: memref<?x?x?x128xf32>, %i: index) {
  // expected-error @+1 {{expects transposed value to have 128 rows (accum's head_dim), got 64}}
  fa.accumulate_tile %v, %acc[%i, %i, %i] transposed : vector<64x128xf32>, memref<?x?x?x128xf32>
  return
}

// -----

func.func @accumulate_partial_warp_slice(%v: vector<24x64xf32>, %acc: memref<?x?x?x64xf32>, %i: index) {
  // expected-error @+1 {{expects value rows (24) to be a multiple of 16 (one slice per warp)}}
  fa.accumulate_tile %v, %acc[%i, %i, %i] : vector<24x64xf32>, memref<?x?x?x64xf32>
  return
}

// -----

func.func @accumulate_partial_column_block(%v: vector<64x20xf32>, %acc: memref<?x?x?x64xf32>, %i: index) {
  // expected-error @+1 {{expects value columns (20) to be a multiple of 8}}
  fa.accumulate_tile %v, %acc[%i, %i, %i] transposed : vector<64x20xf32>, memref<?x?x?x64xf32>
  return
}

// -----

// expected-note @+1 {{prior use here}}
func.func @accumulate_overwrite_not_i1(%v: vector<64x64xf32>, %acc: memref<?x?x?x64xf32>, %i: index) {
  // expected-error @+1 {{use of value '%i' expects different type than prior uses: 'i1' vs 'index'}}
  fa.accumulate_tile %v, %acc[%i, %i, %i] overwrite(%i) : vector<64x64xf32>, memref<?x?x?x64xf32>
  return
}

// -----

func.func @wait_on_i64_counters(%c: memref<?x?x?xi64>, %i: index, %k: i32) {
  // expected-error @+1 {{operand #0 must be 3D memref of 32-bit signless integer values}}
  fa.ordered_wait %c[%i, %i, %i] equals %k : memref<?x?x?xi64>, i32
  return
}

// -----

func.func @wait_on_4d_counters(%c: memref<?x?x?x?xi32>, %i: index, %k: i32) {
  // expected-error @+1 {{operand #0 must be 3D memref of 32-bit signless integer values}}
  fa.ordered_wait %c[%i, %i, %i] equals %k : memref<?x?x?x?xi32>, i32
  return
}

// -----

func.func @wait_for_i64(%c: memref<?x?x?xi32>, %i: index, %k: i64) {
  // expected-error @+1 {{operand #4 must be 32-bit signless integer or index}}
  fa.ordered_wait %c[%i, %i, %i] equals %k : memref<?x?x?xi32>, i64
  return
}

// -----

func.func @signal_f32_counters(%c: memref<?x?x?xf32>, %i: index) {
  // expected-error @+1 {{operand #0 must be 3D memref of 32-bit signless integer values}}
  fa.ordered_signal %c[%i, %i, %i] : memref<?x?x?xf32>
  return
}

// -----

// The producer warps of a warp-specialised kernel neither hold the tile nor
// take the computing threads' barrier.
func.func @signal_in_producer_branch(%c: memref<?x?x?xi32>, %i: index, %producer: i1) {
  scf.if %producer {
    // expected-error @+1 {{must not be in the producer branch of a warp-specialised kernel (the then-region of the scf.if marked fa.warp_roles)}}
    fa.ordered_signal %c[%i, %i, %i] : memref<?x?x?xi32>
  } else {
    fa.ordered_signal %c[%i, %i, %i] : memref<?x?x?xi32>
  } {fa.warp_roles}
  return
}

// -----

func.func @stage_into_global(%v: vector<128x64xf32>, %buf: memref<64x132xf32>) {
  // expected-error @+1 {{expects buffer in the workgroup (shared) address space}}
  fa.stage_accumulator %v, %buf transposed : vector<128x64xf32>, memref<64x132xf32>
  return
}

// -----

// Transposed, the 128 x 64 tile needs 64 rows of 128.
func.func @stage_too_small(%v: vector<128x64xf32>, %buf: memref<64x100xf32, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{expects a buffer of at least 64 x 128 to hold the transposed tile, got 64 x 100}}
  fa.stage_accumulator %v, %buf transposed : vector<128x64xf32>, memref<64x100xf32, #gpu.address_space<workgroup>>
  return
}

// -----

// The producer warps hold no accumulator to stage.
func.func @stage_in_producer_branch(%v: vector<128x64xf32>, %buf: memref<64x132xf32, #gpu.address_space<workgroup>>, %producer: i1) {
  scf.if %producer {
    // expected-error @+1 {{must not be in the producer branch of a warp-specialised kernel}}
    fa.stage_accumulator %v, %buf transposed : vector<128x64xf32>, memref<64x132xf32, #gpu.address_space<workgroup>>
  } {fa.warp_roles}
  return
}

// -----

// TMA's 128-byte swizzle: whole panels of 32 f32.
func.func @stage_swizzled_partial_panel(%v: vector<128x64xf32>, %buf: memref<64x132xf32, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{expects a static row-major buffer of 128-byte-swizzled boxes: rows a multiple of 8, columns a multiple of 32, got 'memref<64x132xf32, #gpu.address_space<workgroup>>'}}
  fa.stage_accumulator %v, %buf transposed swizzled : vector<128x64xf32>, memref<64x132xf32, #gpu.address_space<workgroup>>
  return
}

// -----

!boxes = !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x32xf32, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
func.func @boxes_from_global(%buf: memref<64x128xf32>, %map: !boxes, %i: index) {
  // expected-error @+1 {{expects buffer in the workgroup (shared) address space}}
  fa.accumulate_boxes_async %buf, %map[%i, %i, %i] : memref<64x128xf32>, !boxes
  return
}

// -----

// A box of 64 rows for a buffer of 32.
!boxes = !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x32xf32, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
func.func @boxes_wrong_rows(%buf: memref<32x128xf32, #gpu.address_space<workgroup>>, %map: !boxes, %i: index) {
  // expected-error @+1 {{expects a tensor map of f32 boxes [1, 1, 32, 32] (one 128-byte panel of the buffer's rows) with swizzle_128b}}
  fa.accumulate_boxes_async %buf, %map[%i, %i, %i] : memref<32x128xf32, #gpu.address_space<workgroup>>, !boxes
  return
}

// -----

// The staging stores assume the 128-byte swizzle.
!boxes = !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x32xf32, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
func.func @boxes_unswizzled(%buf: memref<64x128xf32, #gpu.address_space<workgroup>>, %map: !boxes, %i: index) {
  // expected-error @+1 {{expects a tensor map of f32 boxes [1, 1, 64, 32] (one 128-byte panel of the buffer's rows) with swizzle_128b}}
  fa.accumulate_boxes_async %buf, %map[%i, %i, %i] : memref<64x128xf32, #gpu.address_space<workgroup>>, !boxes
  return
}
