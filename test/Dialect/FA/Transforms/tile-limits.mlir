// RUN: fa-opt %s --fa-tile-attention --fa-tile-attention-grad --fa-tile-layernorm --convert-fa-to-nvgpu --convert-fa-rows-to-gpu --split-input-file --verify-diagnostics
// RUN: not fa-opt %s --split-input-file --fa-tile-attention="num-warps=9223372036854775807" 2>&1 | FileCheck %s --check-prefix=WARPS
// RUN: not fa-opt %s --split-input-file --fa-tile-layernorm="block-cols=1048576 resident=1" 2>&1 | FileCheck %s --check-prefix=COLS
// Each tiling option and fa.tile / fa.rows entry against what the lowering
// handles (sizes out of any kernel's range are #fa.tile / #fa.rows verifier
// errors, at the attribute). Past these limits the lowering unrolled the copies of ever longer
// tiles (minutes, then out of memory), a product of warps overflowed (a
// kernel of 0 threads), a 0 went into a division, or a later pass refused
// the kernel in terms of ops the user never wrote.
// WARPS: error: fa-tile-attention: num-warps (9223372036854775807) must be a power of two from 1 to 16
// COLS: error: fa-tile-layernorm: block_cols (1048576) gives each of the 128 threads of a row 8192 values to hold, more than 64 (use more warps, or a shorter block_cols with resident = 0)

!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
// expected-error @+1 {{fa-tile-attention: block-n (1024) must be a multiple of 16 from 16 to 256}}
func.func @long_key_tiles(%q: !t, %k: !t, %v: !t, %o: !t) attributes {fa.tile = #fa.tile<block_n = 1024>} {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t)
  return
}

// -----

!t = memref<?x?x?x64xbf16>
// 2^62 warps of 16 rows made block_m 0 (a kernel of 0 threads).
// expected-error @+1 {{num_warps must be from 1 to 32, got 4611686018427387904}}
func.func @overflowing_warps(%q: !t, %k: !t, %v: !t, %o: !t) attributes {fa.tile = #fa.tile<num_warps = 4611686018427387904>} {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t)
  return
}

// -----

!t = memref<?x?x?x64xbf16>
// expected-error @+1 {{fa-tile-attention: num-warps (6) must be a power of two from 1 to 16}}
func.func @odd_warps(%q: !t, %k: !t, %v: !t, %o: !t) attributes {fa.tile = #fa.tile<block_m = 96, num_warps = 6>} {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t)
  return
}


// -----

!t = memref<?x?x?x64xbf16>
// 16 keys x 64 columns of bf16 are 128 chunks: fewer than 256 threads.
// expected-error @+1 {{fa-tile-attention: the key/value tile (16 x 64) is 128 16-byte chunks, which the 256 threads of 8 warps cannot copy in equal shares; use fewer warps or longer tiles}}
func.func @uneven_copies(%q: !t, %k: !t, %v: !t, %o: !t) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 16, num_warps = 8>} {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t)
  return
}

// -----

!t = memref<?x?x?x128xbf16>
// One warp holding 32 x 256 scores and a 32 x 128 accumulator.
// expected-error @+1 {{fa-tile-attention: the scores (block_m x block_n) and the accumulator (block_m x head_dim) give each of the 32 threads 384 values to hold, more than 256 for 'bf16'; use more warps or smaller tiles}}
func.func @register_tiles(%q: !t, %k: !t, %v: !t, %o: !t) attributes {fa.tile = #fa.tile<block_m = 32, block_n = 256, num_warps = 1>} {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t)
  return
}

// -----

!t = memref<?x?x?x128xf32>
!s = memref<?x?x?xf32>
// f32 runs three TF32 products per product: a lower limit.
// expected-error @+1 {{fa-tile-attention-grad: the dK/dV kernel's S^T, dP^T (block_m x block_n), dK and dV (block_m x head_dim) give each of the 32 threads 256 values to hold, more than 160 for 'f32'; use more warps or smaller tiles}}
func.func @grad_register_tiles(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<block_m = 16, block_n = 128, num_warps = 1>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}

// -----

!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
// A zero-length dQ tile passed the wgmma check (a multiple of 16 up to 256).
// expected-error @+1 {{dq_block_n must be at least 1, got 0}}
func.func @grad_empty_dq_tiles(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, dq_block_m = 64, dq_block_n = 0, dq_num_warps = 4, wgmma = true>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}

// -----

!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
// expected-error @+1 {{dq_num_warps must be from 1 to 32, got 9223372036854775807}}
func.func @grad_dq_warps(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<dq_num_warps = 9223372036854775807>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}

// -----

!x = memref<?x?xbf16>
!c = memref<?xbf16>
!r = memref<?xf32>
// 2^59 + 1 warps made 32 threads once multiplied by 32.
// expected-error @+1 {{num_warps must be from 1 to 32, got 576460752303423489}}
func.func @ln_overflowing_warps(%x: !x, %w: !c, %b: !c, %y: !x, %eps: f32) attributes {fa.rows = #fa.rows<rows = 1, block_cols = 256, num_warps = 576460752303423489, resident = true>} {
  fa.layernorm ins(%x, %w, %b : !x, !c, !c) outs(%y : !x) eps(%eps : f32)
  return
}

// -----

!x = memref<?x?xbf16>
!c = memref<?xbf16>
!r = memref<?xf32>
// expected-error @+1 {{reduce_warps must be from 1 to 32, got 64}}
func.func @ln_grad_reduce_warps(%x: !x, %w: !c, %mean: !r, %rstd: !r, %dy: !x, %dx: !x, %dw: !r, %db: !r) attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = true, reduce_warps = 64>} {
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : !x, !c, !r, !r, !x) outs(%dx, %dw, %db : !x, !r, !r)
  return
}

// -----

// A kernel written at the tile level: a block of 0 threads divided by zero.
module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-error @+1 {{convert-fa-to-nvgpu: expects known_block_size = [32 * warps, 1, 1] with 1 to 16 warps on a kernel with tile ops}}
    gpu.func @no_threads(%q: memref<?x?x?x64xbf16>) kernel attributes {known_block_size = array<i32: 0, 1, 1>} {
      %c0 = arith.constant 0 : index
      %t = fa.load_tile %q[%c0, %c0, %c0] : memref<?x?x?x64xbf16> -> vector<64x64xbf16>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-error @+1 {{convert-fa-to-nvgpu: fa.tile block_m (4096) must be 16 or 32 x the kernel's 4 warps}}
    gpu.func @rows(%q: memref<?x?x?x64xbf16>) kernel attributes {fa.tile = #fa.tile<block_m = 4096>, known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %t = fa.load_tile %q[%c0, %c0, %c0] : memref<?x?x?x64xbf16> -> vector<64x64xbf16>
      gpu.return
    }
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{convert-fa-rows-to-gpu: needs at most 1024 threads (a CUDA block's limit), got 2048}}
  gpu.func @rows_block(%x: memref<?x?xf32>) kernel attributes {fa.rows = #fa.rows<rows = 1, block_cols = 16384>, known_block_size = array<i32: 2048, 1, 1>} {
    gpu.return
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{convert-fa-rows-to-gpu: block_cols (1048576) gives each of the 128 threads of a row 8192 values to hold, more than 64}}
  gpu.func @rows_values(%x: memref<?x?xf32>) kernel attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1048576>, known_block_size = array<i32: 128, 1, 1>} {
    gpu.return
  }
}

// -----

// Takes the pass options (COLS).
func.func @ln_options(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %b: memref<?xbf16>, %y: memref<?x?xbf16>, %eps: f32) {
  fa.layernorm ins(%x, %w, %b : memref<?x?xbf16>, memref<?xbf16>, memref<?xbf16>) outs(%y : memref<?x?xbf16>) eps(%eps : f32)
  return
}
