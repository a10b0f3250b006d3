// RUN: fa-opt %s --fa-tile-attention-grad --split-input-file --verify-diagnostics | FileCheck %s

// fa.tile fuse_dq fuses dQ into one function's dK/dV kernel without the pass
// option, so that one module (the kernel library) holds both backwards and
// fa-run tune picks: @fused takes dq_accum, @separate (the same tile without
// fuse_dq) keeps its dQ kernel. The dK/dV kernel's config records fuse_dq;
// the delta and converting kernels' do not.
!t = memref<?x?x?x128xbf16>
!s = memref<?x?x?xf32>
// CHECK: fa.kernels = {
// CHECK-SAME: fused = #fa.kernel<op = attention_bwd, {{[^#]*}}config = #fa.tile<block_m = 64, block_n = 64, num_warps = 4, num_stages = 2, skip_unit_rescale = false, wgmma = true>, block = [128, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"dq_accum" : memref<?x?x?x128xf32>>, #fa.param<"dq" : memref<?x?x?x128xbf16>>]
// CHECK-SAME: fused_delta = #fa.kernel<op = attention_bwd_delta, {{[^#]*}}config = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, skip_unit_rescale = false, wgmma = true>,
// CHECK-SAME: fused_dkdv = #fa.kernel<op = attention_bwd_dkdv, {{[^#]*}}config = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, skip_unit_rescale = false, wgmma = true, fuse_dq = true>, block = [256, 1, 1], grid = [key_tiles, batch_kv_heads, one], params = [{{[^]]*}}, #fa.param<"dq_accum" : memref<?x?x?x128xf32>>, #fa.param<"dq_semaphores" : memref<?x?x?xi32>>]
// CHECK-SAME: separate = #fa.kernel<op = attention_bwd, {{[^#]*}}config = #fa.tile<{{[^>]*}}>, block = [128, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"q"
// CHECK-NOT: dq_accum
// CHECK-SAME: separate_dkdv = #fa.kernel<op = attention_bwd_dkdv, {{[^#]*}}config = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, skip_unit_rescale = false, wgmma = true>,
// CHECK-NOT: dq_accum
// CHECK-SAME: gpu.container_module
// CHECK: gpu.func @fused_dkdv(
// CHECK: fa.ordered_wait
// CHECK: fa.accumulate_tile
// CHECK: gpu.func @separate_dkdv(
// CHECK-NOT: fa.ordered_wait
// CHECK: gpu.func @separate(
func.func @fused(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true, fuse_dq = true>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}
func.func @separate(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}

// -----

// Asked for where the kernel cannot: head_dim 64 gives dQ^T 64 rows, one
// warpgroup's, where the fused product splits them over two.
!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
// expected-error @+1 {{fa-tile-attention-grad: fa.tile fuse_dq = true needs head_dim 128 on 8 warps of wgmma, without split_dkdv and without a mask region}}
func.func @d64(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, num_stages = 2, wgmma = true, fuse_dq = true>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}

// -----

// ... and so can a mask region, whose empty tiles leave no fixed order of
// the key blocks' additions.
!t = memref<?x?x?x128xbf16>
!s = memref<?x?x?xf32>
// expected-error @+1 {{fa.tile fuse_dq = true needs head_dim 128 on 8 warps of wgmma, without split_dkdv and without a mask region}}
func.func @masked(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, wgmma = true, fuse_dq = true>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t) mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %keep = arith.cmpi sle, %j, %i : index
    fa.yield %keep : i1
  }
  return
}
