// RUN: fa-opt %s -split-input-file -verify-diagnostics
// One case per verifier rule of fa.store_tile_shared.

func.func @global_dest(%t: vector<128x64xbf16>, %d: memref<128x64xbf16>) {
  // expected-error @+1 {{expects dest in the workgroup (shared) address space}}
  fa.store_tile_shared %t, %d : vector<128x64xbf16>, memref<128x64xbf16>
  return
}

// -----

func.func @element_type(%t: vector<128x64xbf16>, %d: memref<128x64xf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{expects dest element type 'f16' to equal the tile element type 'bf16'}}
  fa.store_tile_shared %t, %d : vector<128x64xbf16>, memref<128x64xf16, #gpu.address_space<workgroup>>
  return
}

// -----

// Without `transposed`, dest has the tile's shape...
func.func @shape(%t: vector<128x32xbf16>, %d: memref<32x128xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{expects dest of shape 128x32 (the tile's), got 32x128}}
  fa.store_tile_shared %t, %d : vector<128x32xbf16>, memref<32x128xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

// ... with it, the tile's transpose.
func.func @shape_transposed(%t: vector<128x32xbf16>, %d: memref<128x32xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{expects dest of shape 32x128 (the tile's transpose), got 128x32}}
  fa.store_tile_shared %t, %d transposed : vector<128x32xbf16>, memref<128x32xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

// dest is a product's operand: every dimension a multiple of 16.
func.func @columns(%t: vector<128x24xbf16>, %d: memref<24x128xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{expects tile columns (24) to be a multiple of 16}}
  fa.store_tile_shared %t, %d transposed : vector<128x24xbf16>, memref<24x128xbf16, #gpu.address_space<workgroup>>
  return
}
