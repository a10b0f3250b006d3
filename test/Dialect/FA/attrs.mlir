// RUN: fa-opt %s | FileCheck %s
// RUN: fa-opt %s | fa-opt | FileCheck %s
// RUN: fa-opt %s --mlir-print-op-generic | fa-opt | FileCheck %s
// Round trip of the kernel configuration attributes: entries in any order
// print in declaration order, flags at their default and absent sizes are
// left out, and the printed form parses back to the same attribute.

// CHECK-LABEL: func.func @tile
// CHECK-SAME: fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, num_stages = 2, q_in_shared = true, pipeline_copies = false, skip_unit_rescale = false, stage_output = true, wgmma = true, overlap_softmax = true>
func.func @tile() attributes {fa.tile = #fa.tile<wgmma = true, block_n = 64, q_in_shared = true, block_m = 128, num_warps = 8, num_stages = 2, pipeline_copies = false, skip_unit_rescale = false, stage_output = true, overlap_softmax = true>} {
  return
}

// CHECK-LABEL: func.func @tile_defaults
// CHECK-SAME: fa.tile = #fa.tile<block_n = 32>}
func.func @tile_defaults() attributes {fa.tile = #fa.tile<block_n = 32, q_in_shared = false, pipeline_copies = true, skip_unit_rescale = true, wgmma = false>} {
  return
}

// CHECK-LABEL: func.func @tile_empty
// CHECK-SAME: fa.tile = #fa.tile<>}
func.func @tile_empty() attributes {fa.tile = #fa.tile<>} {
  return
}

// CHECK-LABEL: func.func @tile_backward
// CHECK-SAME: fa.tile = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, wgmma = true, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4>
func.func @tile_backward() attributes {fa.tile = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true>} {
  return
}

// split_dkdv prints after the dq_* entries, where it is declared.
// CHECK-LABEL: func.func @tile_split_dkdv
// CHECK-SAME: fa.tile = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, wgmma = true, dq_block_m = 64, dq_block_n = 32, dq_num_warps = 4, split_dkdv = true>
func.func @tile_split_dkdv() attributes {fa.tile = #fa.tile<split_dkdv = true, block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 32, dq_num_warps = 4, wgmma = true>} {
  return
}

// fuse_dq (backward) prints last, where it is declared.
// CHECK-LABEL: func.func @tile_fuse_dq
// CHECK-SAME: fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, num_stages = 2, wgmma = true, warp_specialize = true, fuse_dq = true>
func.func @tile_fuse_dq() attributes {fa.tile = #fa.tile<fuse_dq = true, block_m = 128, block_n = 64, num_warps = 8, num_stages = 2, wgmma = true, warp_specialize = true>} {
  return
}

// CHECK-LABEL: func.func @rows
// CHECK-SAME: fa.rows = #fa.rows<rows = 1, block_cols = 4096, num_warps = 8, resident = true, persistent = true, reduce_rows = 32, reduce_cols = 64, reduce_warps = 4>
func.func @rows() attributes {fa.rows = #fa.rows<persistent = true, rows = 1, block_cols = 4096, num_warps = 8, resident = true, reduce_rows = 32, reduce_cols = 64, reduce_warps = 4>} {
  return
}

// resident is kept when false: a pass option supplies it when absent.
// CHECK-LABEL: func.func @rows_defaults
// CHECK-SAME: fa.rows = #fa.rows<block_cols = 1024, resident = false>}
func.func @rows_defaults() attributes {fa.rows = #fa.rows<block_cols = 1024, resident = false, persistent = false, reduce_rows = 64, reduce_cols = 32, reduce_warps = 8>} {
  return
}

// CHECK-LABEL: func.func @phases
// CHECK: } {fa.softmax_phase = #fa<phase max>}
// CHECK: } {fa.softmax_phase = #fa<phase sum>}
// CHECK: } {fa.softmax_phase = #fa<phase accumulate>}
// CHECK: } {fa.softmax_phase = #fa<phase online>}
func.func @phases(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
  } {fa.softmax_phase = #fa<phase max>}
  scf.for %i = %c0 to %n step %c1 {
  } {fa.softmax_phase = #fa<phase sum>}
  scf.for %i = %c0 to %n step %c1 {
  } {fa.softmax_phase = #fa<phase accumulate>}
  scf.for %i = %c0 to %n step %c1 {
  } {fa.softmax_phase = #fa<phase online>}
  return
}

// The manifest entries the tiling passes record in fa.kernels.
// CHECK-LABEL: module @kernels attributes {fa.kernels = {
// CHECK-SAME: attn = #fa.kernel<op = attention_bwd, dtype = bf16, head_dim = 64, causal = true, scale = 1.250000e-01 : f32, config = #fa.tile<block_m = 64, block_n = 64, num_warps = 4, num_stages = 2, skip_unit_rescale = false>, block = [128, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"q" : memref<?x?x?x64xbf16>>, #fa.param<"lse" : memref<?x?x?xf32>>], delta_kernel = "attn_delta", dkdv_kernel = "attn_dkdv">
// CHECK-SAME: attn_dkdv = #fa.kernel<op = attention_bwd_dkdv, dtype = bf16, head_dim = 256, causal = false, scale = 6.250000e-02 : f32, config = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, skip_unit_rescale = false, wgmma = true, split_dkdv = true>, block = [256, 1, 1], grid = [key_tiles, batch_kv_heads, dkdv_parts], params = []>
// CHECK-SAME: ln = #fa.kernel<op = layernorm_bwd, dtype = f32, config = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = false>, block = [128, 1, 1], grid = [persistent_row_tiles, one, one], params = [#fa.param<"eps" : f32>], params_kernel = "ln_params">
module @kernels attributes {fa.kernels = {
    attn_dkdv = #fa.kernel<op = attention_bwd_dkdv, dtype = bf16, head_dim = 256, causal = false, scale = 0.0625 : f32, config = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, skip_unit_rescale = false, wgmma = true, split_dkdv = true>, block = [256, 1, 1], grid = [key_tiles, batch_kv_heads, dkdv_parts], params = []>,
    attn = #fa.kernel<dkdv_kernel = "attn_dkdv", op = attention_bwd, dtype = bf16, head_dim = 64, causal = true, scale = 0.125 : f32, config = #fa.tile<block_m = 64, block_n = 64, num_warps = 4, num_stages = 2, skip_unit_rescale = false>, block = [128, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"q" : memref<?x?x?x64xbf16>>, #fa.param<"lse" : memref<?x?x?xf32>>], delta_kernel = "attn_delta">,
    ln = #fa.kernel<op = layernorm_bwd, dtype = f32, config = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = false>, block = [128, 1, 1], grid = [persistent_row_tiles, one, one], params = [#fa.param<"eps" : f32>], params_kernel = "ln_params">}} {
}
