// RUN: fa-opt %s --convert-fa-to-nvgpu --split-input-file --verify-diagnostics

// Products convert-fa-to-nvgpu refuses in wgmma kernels (chip sm_90a), each
// with an error on the op. Input written at the tile level.

// wgmma m64: each warpgroup multiplies 64 rows of the product, here the 32
// columns of a transposed A (whose 64-byte rows would be 64-byte swizzle
// atoms) in a kernel of one warpgroup.
!k = memref<128x32xbf16, #gpu.address_space<workgroup>>
!ds = memref<128x32xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @transposed_a_rows() workgroup(%kb : !k, %db : !ds) kernel attributes {fa.tile = #fa.tile<wgmma = true>, known_block_size = array<i32: 128, 1, 1>} {
    %zero = arith.constant dense<0.0> : vector<32x32xf32>
    // expected-error @+2 {{'fa.tile_matmul' op expects M (32) to be 64 per warpgroup of the kernel's 128 computing threads (wgmma m64)}}
    // expected-error @+1 {{failed to legalize operation 'fa.tile_matmul'}}
    %dq = fa.tile_matmul %kb, %db, %zero transpose_a : !k, !ds, vector<32x32xf32>
    gpu.return
  }
}

// -----

// f32 products take split TF32 on mma.sync even in wgmma kernels, and that
// lowering reads A as [M][K] only.
!k = memref<64x64xf32, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @transposed_a_f32() workgroup(%kb : !k) kernel attributes {fa.tile = #fa.tile<wgmma = true>, known_block_size = array<i32: 128, 1, 1>} {
    %zero = arith.constant dense<0.0> : vector<64x64xf32>
    // expected-error @+2 {{'fa.tile_matmul' op with transpose_a is lowered only onto wgmma: it needs f16 or bf16 operands and a kernel with #fa.tile<wgmma = true>}}
    // expected-error @+1 {{failed to legalize operation 'fa.tile_matmul'}}
    %p = fa.tile_matmul %kb, %kb, %zero transpose_a : !k, !k, vector<64x64xf32>
    gpu.return
  }
}
