// RUN: fa-opt %s --convert-fa-to-nvgpu="chip=sm_80" --split-input-file --verify-diagnostics

// Kernels convert-fa-to-nvgpu refuses, each with an error on the kernel or
// the op. Input written at the tile level; chip sm_80.

// wgmma is sm_90a's alone: on another chip it is an error, not mma.sync.
gpu.module @m {
  // expected-error @+1 {{convert-fa-to-nvgpu: wgmma = true needs chip sm_90a (Hopper's wgmma.mma_async), not sm_80}}
  gpu.func @wgmma_on_sm80(%q: memref<?x?x?x64xbf16>, %i: index) kernel attributes {fa.tile = #fa.tile<wgmma = true>, known_block_size = array<i32: 128, 1, 1>} {
    %t = fa.load_tile %q[%i, %i, %i] : memref<?x?x?x64xbf16> -> vector<64x64xbf16>
    gpu.return
  }
}

// -----

// The warp layout follows from the block size.
gpu.module @m {
  // expected-error @+1 {{convert-fa-to-nvgpu: expects known_block_size = [32 * warps, 1, 1] with 1 to 16 warps on a kernel with tile ops}}
  gpu.func @no_block_size(%q: memref<?x?x?x64xbf16>, %i: index) kernel {
    %t = fa.load_tile %q[%i, %i, %i] : memref<?x?x?x64xbf16> -> vector<16x64xbf16>
    gpu.return
  }
}

// -----

// A block of 0 threads divided by zero.
gpu.module @m {
  // expected-error @+1 {{convert-fa-to-nvgpu: expects known_block_size = [32 * warps, 1, 1] with 1 to 16 warps on a kernel with tile ops}}
  gpu.func @no_threads(%q: memref<?x?x?x64xbf16>, %i: index) kernel attributes {known_block_size = array<i32: 0, 1, 1>} {
    %t = fa.load_tile %q[%i, %i, %i] : memref<?x?x?x64xbf16> -> vector<64x64xbf16>
    gpu.return
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{convert-fa-to-nvgpu: fa.tile block_m (4096) must be 16 or 32 x the kernel's 4 warps}}
  gpu.func @rows_per_warp(%q: memref<?x?x?x64xbf16>, %i: index) kernel attributes {fa.tile = #fa.tile<block_m = 4096>, known_block_size = array<i32: 128, 1, 1>} {
    %t = fa.load_tile %q[%i, %i, %i] : memref<?x?x?x64xbf16> -> vector<64x64xbf16>
    gpu.return
  }
}

// -----

// Copies split into equal shares: 32 chunks do not divide over 64 threads.
!t = memref<?x?x?x16xf16>
!smem = memref<16x16xf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @uneven_copy(%k: !t, %i: index) workgroup(%kb : !smem) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    // expected-error @+2 {{'fa.stage_tile' op cannot split 32 16-byte chunks evenly over 64 threads}}
    // expected-error @+1 {{failed to legalize operation 'fa.stage_tile'}}
    fa.stage_tile %k[%i, %i, %i] into %kb : !t, !smem
    gpu.return
  }
}

// -----

// mma.sync reads A as [M][K]: a transposed A (wgmma's MN-major A) is refused.
!k = memref<64x64xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @transposed_a_mma_sync() workgroup(%kb : !k, %db : !k) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %zero = arith.constant dense<0.0> : vector<64x64xf32>
    // expected-error @+2 {{'fa.tile_matmul' op with transpose_a is lowered only onto wgmma: it needs f16 or bf16 operands and a kernel with #fa.tile<wgmma = true>}}
    // expected-error @+1 {{failed to legalize operation 'fa.tile_matmul'}}
    %dq = fa.tile_matmul %kb, %db, %zero transpose_a : !k, !k, vector<64x64xf32>
    gpu.return
  }
}
