// RUN: fa-opt %s -split-input-file -verify-diagnostics
// One case per verifier rule of the tile-level fa ops.

!smem = memref<64x64xbf16, #gpu.address_space<workgroup>>
func.func @load_tile_columns(%q: memref<1x1x128x64xbf16>, %i: index) {
  // expected-error @+1 {{expects result to have 64 columns (the buffer's head_dim), got 32}}
  %t = fa.load_tile %q[%i, %i, %i] : memref<1x1x128x64xbf16> -> vector<64x32xbf16>
  return
}

// -----

func.func @load_tile_rows(%q: memref<1x1x128x64xbf16>, %i: index) {
  // expected-error @+1 {{expects result rows (24) to be a multiple of 16}}
  %t = fa.load_tile %q[%i, %i, %i] : memref<1x1x128x64xbf16> -> vector<24x64xbf16>
  return
}

// -----

func.func @load_tile_type(%q: memref<1x1x128x64xbf16>, %i: index) {
  // expected-error @+1 {{expects result element type 'f16' to equal the buffer element type 'bf16'}}
  %t = fa.load_tile %q[%i, %i, %i] : memref<1x1x128x64xbf16> -> vector<64x64xf16>
  return
}

// -----

func.func @stage_tile_global(%k: memref<1x1x128x64xbf16>, %buf: memref<64x64xbf16>, %i: index) {
  // expected-error @+1 {{expects dest in the workgroup (shared) address space}}
  fa.stage_tile %k[%i, %i, %i] into %buf : memref<1x1x128x64xbf16>, memref<64x64xbf16>
  return
}

// -----

func.func @stage_rows_global(%lse: memref<?x?x?xf32>, %buf: memref<64xf32>, %i: index) {
  // expected-error @+1 {{expects dest in the workgroup (shared) address space}}
  fa.stage_rows %lse[%i, %i, %i] into %buf : memref<?x?x?xf32>, memref<64xf32>
  return
}

// -----

func.func @copy_rows_async_global(%lse: memref<?x?x?xf32>, %buf: memref<64xf32>, %i: index) {
  // expected-error @+1 {{expects dest in the workgroup (shared) address space}}
  fa.copy_rows_async %lse[%i, %i, %i] into %buf : memref<?x?x?xf32>, memref<64xf32>
  return
}

// -----

func.func @column_broadcast_shared_global(%buf: memref<64xf32>) {
  // expected-error @+1 {{expects rows in the workgroup (shared) address space}}
  %c = fa.column_broadcast_shared %buf : memref<64xf32> -> vector<64x64xf32>
  return
}

// -----

func.func @column_broadcast_shared_columns(%buf: memref<32xf32, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{expects rows to hold one value per result column (64), got 32}}
  %c = fa.column_broadcast_shared %buf : memref<32xf32, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return
}

// -----

func.func @store_tile_columns(%t: vector<64x128xbf16>, %o: memref<1x1x128x64xbf16>, %i: index) {
  // expected-error @+1 {{expects value to have 64 columns (the buffer's head_dim), got 128}}
  fa.store_tile %t, %o[%i, %i, %i] : vector<64x128xbf16>, memref<1x1x128x64xbf16>
  return
}

// -----

func.func @matmul_b_type(%a: vector<64x64xbf16>, %b: memref<64x64xf16, #gpu.address_space<workgroup>>, %c: vector<64x64xf32>) {
  // expected-error @+1 {{expects b element type 'f16' to equal a element type 'bf16'}}
  %r = fa.tile_matmul %a, %b, %c : vector<64x64xbf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, vector<64x64xf32>
  return
}

// -----

func.func @matmul_b_global(%a: vector<64x64xbf16>, %b: memref<64x64xbf16>, %c: vector<64x64xf32>) {
  // expected-error @+1 {{expects b in the workgroup (shared) address space}}
  %r = fa.tile_matmul %a, %b, %c : vector<64x64xbf16>, memref<64x64xbf16>, vector<64x64xf32>
  return
}

// -----

func.func @matmul_reduction(%a: vector<64x64xbf16>, %b: memref<32x64xbf16, #gpu.address_space<workgroup>>, %c: vector<64x64xf32>) {
  // expected-error @+1 {{expects the reduction size of b (32) to equal the columns of a (64)}}
  %r = fa.tile_matmul %a, %b, %c : vector<64x64xbf16>, memref<32x64xbf16, #gpu.address_space<workgroup>>, vector<64x64xf32>
  return
}

// -----

func.func @matmul_acc_shape(%a: vector<64x64xbf16>, %b: memref<32x64xbf16, #gpu.address_space<workgroup>>, %c: vector<64x64xf32>) {
  // expected-error @+1 {{expects acc of shape 64x32, got 64x64}}
  %r = fa.tile_matmul %a, %b, %c transpose_b : vector<64x64xbf16>, memref<32x64xbf16, #gpu.address_space<workgroup>>, vector<64x64xf32>
  return
}

// -----

func.func @matmul_granule(%a: vector<64x64xbf16>, %b: memref<24x64xbf16, #gpu.address_space<workgroup>>, %c: vector<64x24xf32>) {
  // expected-error @+1 {{expects N (24) to be a multiple of 16}}
  %r = fa.tile_matmul %a, %b, %c transpose_b : vector<64x64xbf16>, memref<24x64xbf16, #gpu.address_space<workgroup>>, vector<64x24xf32>
  return
}

// -----

func.func @matmul_shared_a_global(%a: memref<64x64xf32>, %b: memref<64x64xf32, #gpu.address_space<workgroup>>, %c: vector<64x64xf32>) {
  // expected-error @+1 {{expects a in the workgroup (shared) address space}}
  %r = fa.tile_matmul %a, %b, %c transpose_b : memref<64x64xf32>, memref<64x64xf32, #gpu.address_space<workgroup>>, vector<64x64xf32>
  return
}

// -----

// transpose_a reads a shared a as K x M; a register tile is distributed by
// rows and cannot be read transposed.
func.func @matmul_transpose_a_registers(%a: vector<64x64xbf16>, %b: memref<64x64xbf16, #gpu.address_space<workgroup>>, %c: vector<64x64xf32>) {
  // expected-error @+1 {{expects a in shared memory with transpose_a, got a register tile}}
  %r = fa.tile_matmul %a, %b, %c transpose_a : vector<64x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>, vector<64x64xf32>
  return
}

// -----

// With transpose_a the reduction runs over the rows of a (128 here).
func.func @matmul_transpose_a_reduction(%a: memref<128x64xbf16, #gpu.address_space<workgroup>>, %b: memref<64x32xbf16, #gpu.address_space<workgroup>>, %c: vector<64x32xf32>) {
  // expected-error @+1 {{expects the reduction size of b (64) to equal the rows of a (128)}}
  %r = fa.tile_matmul %a, %b, %c transpose_a : memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<64x32xbf16, #gpu.address_space<workgroup>>, vector<64x32xf32>
  return
}

// -----

// ... and M is the columns of a (64), not its rows.
func.func @matmul_transpose_a_acc_shape(%a: memref<128x64xbf16, #gpu.address_space<workgroup>>, %b: memref<32x128xbf16, #gpu.address_space<workgroup>>, %c: vector<128x32xf32>) {
  // expected-error @+1 {{expects acc of shape 64x32, got 128x32}}
  %r = fa.tile_matmul %a, %b, %c transpose_a transpose_b : memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<32x128xbf16, #gpu.address_space<workgroup>>, vector<128x32xf32>
  return
}

// -----

// M = 24 columns of a transposed a: not a whole number of 16-row blocks.
func.func @matmul_transpose_a_granule(%a: memref<64x24xbf16, #gpu.address_space<workgroup>>, %b: memref<64x32xbf16, #gpu.address_space<workgroup>>, %c: vector<24x32xf32>) {
  // expected-error @+1 {{expects M (24) to be a multiple of 16}}
  %r = fa.tile_matmul %a, %b, %c transpose_a : memref<64x24xbf16, #gpu.address_space<workgroup>>, memref<64x32xbf16, #gpu.address_space<workgroup>>, vector<24x32xf32>
  return
}

// -----

func.func @row_broadcast_rows(%r: vector<32xf32>) {
  // expected-error @+1 {{expects one source value per result row (64), got 32}}
  %t = fa.row_broadcast %r : vector<32xf32> -> vector<64x64xf32>
  return
}

// -----

func.func @store_tile_staging_global(%t: vector<64x64xbf16>, %o: memref<1x1x128x64xbf16>, %s: memref<64x64xbf16>, %i: index) {
  // expected-error @+1 {{expects staging in the workgroup (shared) address space}}
  fa.store_tile %t, %o[%i, %i, %i] through %s : memref<64x64xbf16> : vector<64x64xbf16>, memref<1x1x128x64xbf16>
  return
}

// -----

func.func @store_tile_staging_shape(%t: vector<64x64xbf16>, %o: memref<1x1x128x64xbf16>, %s: memref<32x64xbf16, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{expects staging of the value's shape and element type 'vector<64x64xbf16>', got 'memref<32x64xbf16, #gpu.address_space<workgroup>>'}}
  fa.store_tile %t, %o[%i, %i, %i] through %s : memref<32x64xbf16, #gpu.address_space<workgroup>> : vector<64x64xbf16>, memref<1x1x128x64xbf16>
  return
}

// -----

func.func @load_block_type(%x: memref<?x?xbf16>, %i: index) {
  // expected-error @+1 {{expects the block element type 'f32' to equal the buffer element type 'bf16'}}
  %b = fa.load_block %x[%i, %i] : memref<?x?xbf16> -> vector<1x1024xf32>
  return
}

// -----

func.func @load_block_indices(%x: memref<?x?xbf16>, %i: index) {
  // expected-error @+1 {{expects 2 indices (one per buffer dimension), got 1}}
  %b = fa.load_block %x[%i] : memref<?x?xbf16> -> vector<1x1024xbf16>
  return
}

// -----

func.func @store_block_rank(%v: vector<1024xf32>, %y: memref<?x?xf32>, %i: index) {
  // expected-error @+1 {{expects a rank-2 block for a rank-2 buffer, got 'vector<1024xf32>'}}
  fa.store_block %v, %y[%i, %i] : vector<1024xf32>, memref<?x?xf32>
  return
}

// -----

// A tile's copy of a mask region takes (batch, head, q_idx, kv_idx) then one
// argument per capture, of the captures' types.
func.func @mask_tile_arguments(%s: vector<64x64xf32>, %i: index, %c: f32) {
  // expected-error @+1 {{'fa.mask_tile' op expects region arguments ('index', 'index', 'index', 'index', 'f32'), got ('index', 'index', 'index', 'index')}}
  %r = fa.mask_tile %s rows(%i) cols(%i) kv_len(%i) at(%i, %i) captures(%c : f32) : vector<64x64xf32> {
  ^bb0(%b: index, %h: index, %q: index, %k: index):
    %keep = arith.cmpi sle, %k, %q : index
    fa.yield %keep : i1
  }
  return
}

// -----

func.func @mask_tile_yield(%s: vector<64x64xf32>, %i: index) {
  // expected-error @+1 {{'fa.mask_tile' op expects the region to end in fa.yield of one 'i1'}}
  %r = fa.mask_tile %s rows(%i) cols(%i) kv_len(%i) at(%i, %i) : vector<64x64xf32> {
  ^bb0(%b: index, %h: index, %q: index, %k: index):
    %x = arith.constant 1.0 : f32
    fa.yield %x : f32
  }
  return
}

// -----

func.func @score_tile_arguments(%s: vector<64x64xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op expects region arguments ('f32', 'index', 'index', 'index', 'index'), got ('index', 'index', 'index', 'index')}}
  %r = fa.score_tile %s rows(%i) cols(%i) at(%i, %i) : vector<64x64xf32> {
  ^bb0(%b: index, %h: index, %q: index, %k: index):
    %x = arith.constant 1.0 : f32
    fa.yield %x : f32
  }
  return
}

// -----

func.func @score_tile_yield(%s: vector<64x64xf32>, %i: index) {
  // expected-error @+1 {{'fa.score_tile' op expects the region to end in fa.yield of one 'f32'}}
  %r = fa.score_tile %s rows(%i) cols(%i) at(%i, %i) : vector<64x64xf32> {
  ^bb0(%x: f32, %b: index, %h: index, %q: index, %k: index):
    %keep = arith.cmpi sle, %k, %q : index
    fa.yield %keep : i1
  }
  return
}
