// RUN: fa-opt %s -split-input-file -verify-diagnostics
// The kernel configuration attributes: a misspelt key, a value of the wrong
// kind or out of range is an error at the attribute, before any pass runs;
// a discardable fa attribute holding another type is an error on its op.

// expected-error @+1 {{duplicate or unknown struct parameter name: block_k}}
func.func @misspelt_tile_key() attributes {fa.tile = #fa.tile<block_m = 64, block_k = 16>} {
  return
}

// -----

// expected-error @+1 {{duplicate or unknown struct parameter name: block_m}}
func.func @tile_key_twice() attributes {fa.tile = #fa.tile<block_m = 64, block_m = 128>} {
  return
}

// -----

// expected-error @+2 {{expected `true` or `false`}}
// expected-error @+1 {{failed to parse FA_TileAttr parameter 'wgmma' which is to be a `bool`}}
func.func @flag_as_integer() attributes {fa.tile = #fa.tile<wgmma = 1>} {
  return
}

// -----

// MLIR's integer parser reads `true` as 1 (and a 1-bit -1): refused.
// expected-error @+2 {{expected an integer, got 'true'}}
// expected-error @+1 {{failed to parse FA_TileAttr parameter 'block_m'}}
func.func @size_as_flag() attributes {fa.tile = #fa.tile<block_m = true>} {
  return
}

// -----

// expected-error @+1 {{attribute 'fa.tile' must be a tile configuration #fa.tile<...>, got {block_m = 64 : i64}}}
func.func @tile_dictionary() attributes {fa.tile = {block_m = 64}} {
  return
}

// -----

// expected-error @+1 {{attribute 'fa.tile' must be a tile configuration #fa.tile<...>, got #fa.rows<rows = 1>}}
func.func @rows_as_tile() attributes {fa.tile = #fa.rows<rows = 1>} {
  return
}

// -----

// expected-error @+1 {{num_warps must be from 1 to 32, got 64}}
func.func @tile_warps_range() attributes {fa.tile = #fa.tile<num_warps = 64>} {
  return
}

// -----

// expected-error @+1 {{blocks_per_sm must be from 1 to 32, got 0}}
func.func @tile_blocks_per_sm_range() attributes {fa.tile = #fa.tile<blocks_per_sm = 0>} {
  return
}

// -----

// The fused dQ^T is a warpgroup MMA over the dK/dV kernel's two warpgroups.
// expected-error @+1 {{fuse_dq = true needs wgmma = true}}
func.func @tile_fuse_dq_without_wgmma() attributes {fa.tile = #fa.tile<block_m = 128, fuse_dq = true>} {
  return
}

// -----

// persistent's loop over tiles lives in fa-warp-specialize's roles.
// expected-error @+1 {{persistent = true needs warp_specialize = true}}
func.func @tile_persistent_alone() attributes {fa.tile = #fa.tile<block_m = 128, persistent = true>} {
  return
}

// -----

// expected-error @+1 {{num_stages must be from 1 to 2, got 3}}
func.func @tile_stages_range() attributes {fa.tile = #fa.tile<num_stages = 3>} {
  return
}

// -----

// expected-error @+1 {{block_n must be at least 1, got 0}}
func.func @tile_empty_block() attributes {fa.tile = #fa.tile<block_n = 0>} {
  return
}

// -----

// expected-error @+1 {{dq_block_m must be at least 1, got -16}}
func.func @tile_negative_dq_block() attributes {fa.tile = #fa.tile<dq_block_m = -16>} {
  return
}

// -----

// expected-error @+1 {{duplicate or unknown struct parameter name: block_m}}
func.func @misspelt_rows_key() attributes {fa.rows = #fa.rows<block_m = 64>} {
  return
}

// -----

// expected-error @+2 {{expected `true` or `false`}}
// expected-error @+1 {{failed to parse FA_RowsAttr parameter 'resident'}}
func.func @rows_flag_as_integer() attributes {fa.rows = #fa.rows<resident = 1>} {
  return
}

// -----

// expected-error @+1 {{attribute 'fa.rows' must be a rows configuration #fa.rows<...>, got {rows = 1 : i64}}}
func.func @rows_dictionary() attributes {fa.rows = {rows = 1}} {
  return
}

// -----

// expected-error @+1 {{rows must be at least 1, got 0}}
func.func @rows_range() attributes {fa.rows = #fa.rows<rows = 0>} {
  return
}

// -----

// expected-error @+1 {{reduce_warps must be from 1 to 32, got 33}}
func.func @rows_reduce_warps_range() attributes {fa.rows = #fa.rows<reduce_warps = 33>} {
  return
}

// -----

func.func @bad_phase(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
  // expected-error @+2 {{expected ::mlir::fa::SoftmaxPhase to be one of: max, sum, accumulate, online}}
  // expected-error @+1 {{failed to parse FA_SoftmaxPhaseAttr parameter 'value'}}
  } {fa.softmax_phase = #fa<phase bogus>}
  return
}

// -----

// A phase mark that is not a phase crashed fa-fuse-online-softmax (found by
// scripts/fuzz_fa_opt.py when it was a string attribute).
func.func @phase_string(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{attribute 'fa.softmax_phase' must be a softmax phase #fa<phase max|sum|accumulate|online>, got "max"}}
  scf.for %i = %c0 to %n step %c1 {
  } {fa.softmax_phase = "max"}
  return
}

// -----

func.func @phase_unit(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{attribute 'fa.softmax_phase' must be a softmax phase #fa<phase max|sum|accumulate|online>, got unit}}
  scf.for %i = %c0 to %n step %c1 {
  } {fa.softmax_phase}
  return
}

// -----

// expected-error @+1 {{attribute 'fa.kernels' must be a dictionary of kernel entries (name = #fa.kernel<...>), got ["attn"]}}
module attributes {fa.kernels = ["attn"]} {
}

// -----

// expected-error @+1 {{the config of a layernorm_fwd kernel must be a #fa.rows, got #fa.tile<block_m = 64>}}
module attributes {fa.kernels = {ln = #fa.kernel<op = layernorm_fwd, dtype = f16, config = #fa.tile<block_m = 64>, block = [128, 1, 1], grid = [row_tiles, one, one], params = []>}} {
}

// -----

// expected-error @+1 {{head_dim, causal and scale are required for a attention_fwd kernel}}
module attributes {fa.kernels = {attn = #fa.kernel<op = attention_fwd, dtype = bf16, head_dim = 64, config = #fa.tile<block_m = 64>, block = [128, 1, 1], grid = [query_tiles, batch_heads, one], params = []>}} {
}

// -----

// expected-error @+1 {{delta_kernel and dkdv_kernel name the companions of an attention_bwd kernel, which has both}}
module attributes {fa.kernels = {dq = #fa.kernel<op = attention_bwd, dtype = bf16, head_dim = 64, causal = false, scale = 1.0 : f32, config = #fa.tile<block_m = 64>, block = [128, 1, 1], grid = [query_tiles, batch_heads, one], params = [], delta_kernel = "dq_delta">}} {
}

// -----

// expected-error @+1 {{block must be 3 positive thread counts and grid 3 dimensions}}
module attributes {fa.kernels = {ln = #fa.kernel<op = layernorm_fwd, dtype = f16, config = #fa.rows<rows = 1>, block = [128, 1], grid = [row_tiles, one, one], params = []>}} {
}

// -----

// expected-error @+2 {{expected one of [query_tiles, key_tiles, batch_heads, batch_kv_heads, row_tiles, persistent_row_tiles, column_tiles, one, heads, dkdv_parts, persistent_query_tiles] for what the runtime sizes a grid dimension of a kernel by, got: rows}}
// expected-error @+1 {{failed to parse FA_KernelAttr parameter 'grid'}}
module attributes {fa.kernels = {ln = #fa.kernel<op = layernorm_fwd, dtype = f16, config = #fa.rows<rows = 1>, block = [128, 1, 1], grid = [rows, one, one], params = []>}} {
}

// -----

// expected-error @+2 {{kernel parameter 'x' must be a memref of f16, bf16, f32 or i32, an f32, i32, i64 or index scalar, or a tensor map, got 'i16'}}
// expected-error @+1 {{failed to parse FA_KernelAttr parameter 'params'}}
module attributes {fa.kernels = {ln = #fa.kernel<op = layernorm_fwd, dtype = f16, config = #fa.rows<rows = 1>, block = [128, 1, 1], grid = [row_tiles, one, one], params = [#fa.param<"x" : i16>]>}} {
}

// -----

// expected-error @+1 {{dsinks_kernel names a companion of an attention_bwd kernel}}
module attributes {fa.kernels = {ln = #fa.kernel<op = layernorm_fwd, dtype = f16, config = #fa.rows<rows = 1>, block = [128, 1, 1], grid = [row_tiles, one, one], params = [], dsinks_kernel = "s">}} {
}

// -----

// expected-error @+1 {{attribute 'fa.kernels' must be a dictionary of kernel entries (name = #fa.kernel<...>), got {attn = {op = "attention_fwd"}}}}
module attributes {fa.kernels = {attn = {op = "attention_fwd"}}} {
}

// -----

// A split dK/dV kernel (dV in blocks of grid z 0, dK in z 1) has dkdv_parts
// as its grid z, and only it.
// expected-error @+1 {{a dK/dV kernel with split_dkdv has grid z dkdv_parts (2: dV, then dK), and only it}}
module attributes {fa.kernels = {dkdv = #fa.kernel<op = attention_bwd_dkdv, dtype = bf16, head_dim = 256, causal = false, scale = 1.0 : f32, config = #fa.tile<block_m = 128, split_dkdv = true>, block = [256, 1, 1], grid = [key_tiles, batch_kv_heads, one], params = []>}} {
}

// -----

// expected-error @+1 {{a dK/dV kernel with split_dkdv has grid z dkdv_parts (2: dV, then dK), and only it}}
module attributes {fa.kernels = {dkdv = #fa.kernel<op = attention_bwd_dkdv, dtype = bf16, head_dim = 256, causal = false, scale = 1.0 : f32, config = #fa.tile<block_m = 128>, block = [256, 1, 1], grid = [key_tiles, batch_kv_heads, dkdv_parts], params = []>}} {
}

// -----

// expected-error @+1 {{a dK/dV kernel with split_dkdv has grid z dkdv_parts (2: dV, then dK), and only it}}
module attributes {fa.kernels = {fwd = #fa.kernel<op = attention_fwd, dtype = bf16, head_dim = 256, causal = false, scale = 1.0 : f32, config = #fa.tile<block_m = 128>, block = [256, 1, 1], grid = [query_tiles, dkdv_parts, one], params = []>}} {
}
