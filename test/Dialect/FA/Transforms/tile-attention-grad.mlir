// RUN: fa-opt %s --fa-tile-attention-grad --split-input-file --verify-diagnostics | FileCheck %s
// RUN: fa-opt %s --fa-tile-attention-grad="block-m=32 block-n=16 num-warps=2" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=OPTIONS

!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>

// Three kernels, the dq one carrying its companions' names; GQA and causal.
// CHECK-LABEL: module attributes {fa.kernels = {
// CHECK-SAME: g = #fa.kernel<op = attention_bwd, dtype = bf16, head_dim = 64, causal = true, scale = 1.250000e-01 : f32, config = #fa.tile<block_m = 64, block_n = 64, num_warps = 4, num_stages = 2, skip_unit_rescale = false>, block = [128, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"q" : {{.*}}>, #fa.param<"k" : {{.*}}>, #fa.param<"v" : {{.*}}>, #fa.param<"dout" : {{.*}}>, #fa.param<"lse" : {{.*}}>, #fa.param<"delta" : {{.*}}>, #fa.param<"dq" : memref<?x?x?x64xbf16>>], delta_kernel = "g_delta", dkdv_kernel = "g_dkdv">
// CHECK-SAME: g_delta = #fa.kernel<op = attention_bwd_delta,{{.*}}grid = [query_tiles, batch_heads, one], params = [#fa.param<"out" : {{.*}}>, #fa.param<"dout" : {{.*}}>, #fa.param<"delta" : memref<?x?x?xf32>>]>
// CHECK-SAME: g_dkdv = #fa.kernel<op = attention_bwd_dkdv,{{.*}}grid = [key_tiles, batch_kv_heads, one], params = [#fa.param<"q" : {{.*}}>, #fa.param<"k" : {{.*}}>, #fa.param<"v" : {{.*}}>, #fa.param<"dout" : {{.*}}>, #fa.param<"lse" : {{.*}}>, #fa.param<"delta" : {{.*}}>, #fa.param<"dk" : {{.*}}>, #fa.param<"dv" : memref<?x?x?x64xbf16>>]>
// CHECK-NOT: func.func

// delta = rowsum(dout * out), one f32 per query row.
// CHECK: gpu.func @g_delta(%[[O:.*]]: memref<?x?x?x64xbf16>, %[[DO:.*]]: memref<?x?x?x64xbf16>, %[[DELTA:.*]]: memref<?x?x?xf32>)
// CHECK: fa.load_tile %[[DO]]
// CHECK: fa.load_tile %[[O]]
// CHECK: arith.mulf
// CHECK: %[[SUM:.*]] = vector.multi_reduction <add>, %{{.*}} [1] : vector<64x64xf32> to vector<64xf32>
// CHECK: fa.store_rows %[[SUM]], %[[DELTA]]

// dK, dV: K and V stay in shared memory; a loop over the query heads of the
// kv head, inside it over the query tiles from the diagonal on.
// CHECK: gpu.func @g_dkdv(%[[Q:[^:]*]]: memref<?x?x?x64xbf16>, %[[K:[^:]*]]: memref<?x?x?x64xbf16>, %[[V:[^:]*]]: memref<?x?x?x64xbf16>, %[[DO2:[^:]*]]: memref<?x?x?x64xbf16>, %[[LSE:[^:]*]]: memref<?x?x?xf32>, %[[DL:[^:]*]]: memref<?x?x?xf32>, %[[DK:[^:]*]]: memref<?x?x?x64xbf16>, %[[DV:[^:]*]]: memref<?x?x?x64xbf16>) workgroup(%[[KB:[^ ]*]] : memref<64x64xbf16, #gpu.address_space<workgroup>> {llvm.align = 128 : i64}, %[[VB:[^ ]*]] : {{.*}}, %[[QB:[^ ]*]] : {{.*}}, %[[DOB:[^ ]*]] : {{.*}}, %[[LSEB:[^ ]*]] : memref<64xf32, #gpu.address_space<workgroup>> {{.*}}, %[[DLB:[^ ]*]] : memref<64xf32, #gpu.address_space<workgroup>> {{.*}})
// CHECK: %[[KEY0:.*]] = arith.muli %{{.*}}, %c64
// CHECK: fa.stage_tile %[[K]][%{{.*}}, %{{.*}}, %[[KEY0]]] into %[[KB]]
// CHECK: fa.stage_tile %[[V]][%{{.*}}, %{{.*}}, %[[KEY0]]] into %[[VB]]
// CHECK: %[[FIRST:.*]] = arith.divui %[[KEY0]], %c64
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %{{.*}} step %c1{{.*}} iter_args
// CHECK:   scf.for %[[J:.*]] = %[[FIRST]] to %{{.*}} step %c1{{.*}} iter_args(%[[DKACC:.*]] = %{{.*}}, %[[DVACC:.*]] = %{{.*}})
// CHECK:     %[[Q0:.*]] = arith.muli %[[J]], %c64
// CHECK:     fa.stage_tile %[[Q]][{{.*}}, %[[Q0]]] into %[[QB]]
// CHECK:     fa.stage_tile %[[DO2]][{{.*}}, %[[Q0]]] into %[[DOB]]
// With two stages the queries' lse and delta are staged with them (and
// copied ahead with them by fa-pipeline-kv-copies).
// CHECK:     fa.stage_rows %[[LSE]][{{.*}}, %[[Q0]]] into %[[LSEB]] : memref<?x?x?xf32>, memref<64xf32, #gpu.address_space<workgroup>>
// CHECK:     fa.stage_rows %[[DL]][{{.*}}, %[[Q0]]] into %[[DLB]]
// Both score-like products first (S^T, then dP^T), so that with wgmma the
// second runs during the probabilities.
// CHECK:     %[[ST:.*]] = fa.tile_matmul %[[KB]], %[[QB]], %{{.*}} transpose_b
// CHECK:     %[[DPT:.*]] = fa.tile_matmul %[[VB]], %[[DOB]], %{{.*}} transpose_b
// CHECK:     fa.apply_mask %[[ST]] rows(%[[KEY0]]) cols(%[[Q0]]) kv_len(%{{.*}}) causal transposed
// CHECK:     fa.column_broadcast_shared %[[LSEB]] : memref<64xf32, #gpu.address_space<workgroup>> -> vector<64x64xf32>
// CHECK:     %[[PT:.*]] = math.exp2
// CHECK:     %[[PTB:.*]] = arith.truncf %[[PT]]
// CHECK:     %[[NEWDV:.*]] = fa.tile_matmul %[[PTB]], %[[DOB]], %[[DVACC]] :
// CHECK:     fa.column_broadcast_shared %[[DLB]]
// CHECK:     arith.subf %[[DPT]]
// CHECK:     %[[NEWDK:.*]] = fa.tile_matmul %{{.*}}, %[[QB]], %[[DKACC]] :
// CHECK:     scf.yield %[[NEWDK]], %[[NEWDV]]
// CHECK:   } {fa.copy_loop}
// The scale comes into dK once.
// CHECK: arith.mulf %{{.*}}, %cst{{.*}} : vector<64x64xf32>
// CHECK: fa.store_tile %{{.*}}, %[[DK]][{{.*}}, %[[KEY0]]]
// CHECK: fa.store_tile %{{.*}}, %[[DV]][{{.*}}, %[[KEY0]]]

// dQ: the query tile's lse and delta once; a key loop in the forward's
// form (every tile, masked), marked for fa-eliminate-causal-tiles.
// CHECK: gpu.func @g(
// CHECK: %[[ROW0:.*]] = arith.muli %{{.*}}, %c64
// CHECK: fa.load_rows %{{.*}}[{{.*}}, %[[ROW0]]] : memref<?x?x?xf32> -> vector<64xf32>
// CHECK: fa.load_rows
// CHECK: %[[N:.*]] = arith.ceildivui
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %[[N]]
// CHECK:   %[[S:.*]] = fa.tile_matmul {{.*}} transpose_b
// CHECK:   fa.tile_matmul {{.*}} transpose_b
// CHECK:   fa.apply_mask %[[S]] rows(%[[ROW0]]) cols(%{{.*}}) kv_len(%{{.*}}) causal :
// CHECK:   math.exp2
// CHECK:   fa.tile_matmul %{{.*}} :
// CHECK: } {fa.copy_loop, fa.kv_loop}
// OPTIONS: config = #fa.tile<block_m = 32, block_n = 16, num_warps = 2, num_stages = 2, skip_unit_rescale = false>,
func.func @g(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t) causal
  return
}

// -----

!t = memref<?x?x?x128xf32>
!s = memref<?x?x?xf32>

// Not causal: every query tile and every key tile; f32 products stay f32.
// CHECK-LABEL: gpu.func @full_dkdv
// CHECK: scf.for %{{.*}} = %c0{{.*}} to
// CHECK:   scf.for %{{.*}} = %c0{{.*}} to
// CHECK:     fa.apply_mask %{{.*}} kv_len(%{{.*}}) transposed :
// CHECK-NOT:     arith.truncf
// CHECK:     fa.tile_matmul %{{.*}} : vector<32x16xf32>, memref<16x128xf32
// CHECK-LABEL: gpu.func @full(
// CHECK: scf.for
// CHECK: } {fa.copy_loop, fa.kv_loop}
func.func @full(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<block_m = 32, block_n = 16, num_warps = 2>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}

// -----

!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
// expected-error @+1 {{fa-tile-attention-grad: block-m (48) must be 16 or 32 x num-warps (4): each warp owns one or two 16-row blocks of keys of the dK/dV kernel}}
func.func @bad_block_m(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<block_m = 48, num_warps = 4>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}

// -----

!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
// expected-error @+1 {{fa-tile-attention-grad: fa.tile q_in_shared configures the forward (fa-tile-attention); the backward takes block_m, block_n, num_warps, num_stages, dq_block_m, dq_block_n, dq_num_warps, wgmma, split_dkdv, warp_specialize and fuse_dq}}
func.func @forward_flag(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<q_in_shared = true>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}

// -----

// The dQ kernel takes its own tiles; the delta and dK/dV kernels keep the
// shared ones. num_stages reaches every kernel's configuration.
!t = memref<?x?x?x128xbf16>
!s = memref<?x?x?xf32>
// CHECK-LABEL: module attributes {fa.kernels = {
// CHECK-SAME: own_dq = #fa.kernel<{{[^>]*}}config = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, num_stages = 1, skip_unit_rescale = false>, block = [256, 1, 1]
// CHECK-SAME: own_dq_delta = #fa.kernel<{{[^>]*}}config = #fa.tile<block_m = 64, block_n = 32, num_warps = 4, num_stages = 1, skip_unit_rescale = false>, block = [128, 1, 1]
// CHECK-SAME: own_dq_dkdv = #fa.kernel<{{[^>]*}}config = #fa.tile<block_m = 64, block_n = 32, num_warps = 4, num_stages = 1, skip_unit_rescale = false>, block = [128, 1, 1]
// CHECK: gpu.func @own_dq_dkdv({{.*}}workgroup(%{{.*}} : memref<64x128xbf16, {{.*}}, %{{.*}} : memref<64x128xbf16, {{.*}}, %{{.*}} : memref<32x128xbf16, {{.*}}, %{{.*}} : memref<32x128xbf16, {{[^,]*}}) kernel
// One stage: the loop is not pipelined, lse and delta stay in global memory.
// CHECK-NOT: fa.stage_rows
// CHECK: fa.column_broadcast %{{.*}} : memref<?x?x?xf32> -> vector<64x32xf32>
// CHECK: gpu.func @own_dq({{.*}}workgroup(%{{.*}} : memref<128x128xbf16, {{.*}}, %{{.*}} : memref<128x128xbf16, {{.*}}, %{{.*}} : memref<64x128xbf16, {{.*}}, %{{.*}} : memref<64x128xbf16
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
func.func @own_dq(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<block_m = 64, block_n = 32, num_warps = 4, num_stages = 1, dq_block_m = 128, dq_block_n = 64, dq_num_warps = 8>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}

// -----

!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
// expected-error @+1 {{fa-tile-attention-grad: block-m (48) must be 16 or 32 x num-warps (4): each warp owns one or two 16-row blocks of queries of the dQ kernel}}
func.func @bad_dq_warps(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<dq_block_m = 48, dq_num_warps = 4>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}


// -----

// wgmma = 1 reaches both kernels' configurations (and the delta kernel's);
// their shared tiles are 1024-byte aligned for the 128-byte swizzle wgmma
// applies itself.
!t = memref<?x?x?x128xbf16>
!s = memref<?x?x?xf32>
// CHECK-LABEL: module attributes {fa.kernels = {
// CHECK-SAME: wg = #fa.kernel<{{[^>]*}}config = #fa.tile<block_m = 64, block_n = 64, num_warps = 4, num_stages = 2, skip_unit_rescale = false, wgmma = true>
// CHECK-SAME: wg_dkdv = #fa.kernel<{{[^>]*}}config = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, skip_unit_rescale = false, wgmma = true>
// CHECK: gpu.func @wg_dkdv({{.*}}workgroup(%{{.*}} : memref<128x128xbf16, #gpu.address_space<workgroup>> {llvm.align = 1024 : i64}
// CHECK: gpu.func @wg({{.*}}workgroup(%{{.*}} : memref<64x128xbf16, #gpu.address_space<workgroup>> {llvm.align = 1024 : i64}
func.func @wg(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}

// -----

!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
// expected-error @+1 {{fa-tile-attention-grad: wgmma needs whole warpgroups with 64 queries of the dQ kernel each (block_m = 16 x num_warps, num_warps a multiple of 4); got block_m 128 on 4 warps}}
func.func @wgmma_two_row_blocks(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<block_m = 64, num_warps = 4, dq_block_m = 128, wgmma = true>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}

// -----

!t = memref<?x?x?x64xf32>
!s = memref<?x?x?xf32>
// expected-error @+1 {{fa-tile-attention-grad: wgmma needs f16 or bf16 operands}}
func.func @wgmma_f32(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<wgmma = true>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}

// -----

!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
// expected-error @+1 {{fa-tile-attention-grad: block-n (512) must be a multiple of 16 from 16 to 256}}
func.func @wgmma_wide(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<block_m = 64, block_n = 512, num_warps = 4, wgmma = true>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
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

!t = memref<?x?x?x256xbf16>
!s = memref<?x?x?xf32>
// head_dim 256 with D=128's backward tiles: dK and dV alone are 2 x 64 x 256
// f32 per warpgroup, 256 registers a thread, at any tile size; a D=256
// backward splits the dK/dV kernel (split_dkdv, below).
// expected-error @+1 {{fa-tile-attention-grad: the dK/dV kernel's S^T, dP^T (block_m x block_n), dK and dV (block_m x head_dim) give each of the 256 threads 288 values to hold, more than 256 for 'bf16'; use more warps or smaller tiles}}
func.func @dkdv_256_registers(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, wgmma = true>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}

// -----

!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
// The backward copies the regions like the forward, transposed in the dK/dV
// kernel (rows are keys), and multiplies dS by the score region's derivative
// (for s * s: 2 s, built by the compiler) at the same scaled scores; the
// captures are the dK/dV and dQ kernels' last parameters. A mask region
// starts the dK/dV loop over query tiles at 0 and marks it for the
// classifier.
// CHECK: fa.kernels = {{.*}}variant = "custom"
// CHECK-LABEL: gpu.func @score_region_dkdv(
// CHECK-SAME: %[[C:[^:]*]]: f32)
// CHECK: scf.for {{.*}} = %c0{{.*}} to
// CHECK: %[[S:.*]] = arith.mulf %{{.*}}, %{{.*}} : vector<64x64xf32>
// CHECK: fa.score_tile %[[S]] {{.*}} captures(%[[C]] : f32) transposed
// CHECK: arith.addf
// CHECK: fa.score_tile %[[S]] {{.*}} captures(%[[C]] : f32) transposed
// CHECK: fa.mask_tile {{.*}} captures(%[[C]] : f32) transposed
// CHECK: } {fa.copy_loop, fa.kv_loop}
// CHECK-LABEL: gpu.func @score_region(
// CHECK: fa.score_tile
// CHECK: fa.mask_tile
func.func @score_region(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t, %c: f32) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t) captures(%c : f32) mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %cc: f32):
    %keep = arith.cmpi sle, %j, %i : index
    fa.yield %keep : i1
  } score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %cc: f32):
    %sq = arith.mulf %s, %s : f32
    %y = arith.addf %sq, %cc : f32
    fa.yield %y : f32
  }
  return
}

// -----

!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
func.func @softcap(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t, %cap: f32) {
  // expected-error @+1 {{fa-tile-attention-grad: named variants (causal_bottom_right, window, document, softcap, alibi) are compiled as regions: run --fa-expand-attention-variants first (fa-to-ptx does)}}
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t) softcap(%cap)
  return
}

// -----

!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
// Sinks: the dQ and dK/dV kernels are those without (the forward's lse holds
// the sink); the dQ kernel names a fourth kernel, a row-wise one per query
// head, that sums -exp(sink - lse) * delta over the batch and the queries:
// [batch, heads, queries] read as rows b * H + h, 1024 queries a block,
// beyond the queries zeroed, then one sum of the block, negated.
// CHECK: fa.kernels = {
// CHECK-SAME: sinks = #fa.kernel<op = attention_bwd{{.*}}dsinks_kernel = "sinks_dsinks">
// CHECK-SAME: sinks_dsinks = #fa.kernel<op = attention_bwd_dsinks, dtype = f32, config = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4>, block = [128, 1, 1], grid = [heads, one, one], params = [#fa.param<"lse" : memref<?x?x?xf32>>, #fa.param<"delta" : memref<?x?x?xf32>>, #fa.param<"sinks" : memref<?xf32>>, #fa.param<"dsinks" : memref<?xf32>>]>
// CHECK-LABEL: gpu.func @sinks_dsinks(
// CHECK-SAME: %[[LSE:[^:]*]]: memref<?x?x?xf32>, %[[DELTA:[^:]*]]: memref<?x?x?xf32>, %[[SINKS:[^:]*]]: memref<?xf32>, %[[DSINKS:[^:]*]]: memref<?xf32>)
// CHECK-SAME: fa.rows = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4>
// CHECK: %[[HEAD:.*]] = gpu.block_id x
// CHECK: %[[LSEROWS:.*]] = memref.collapse_shape %[[LSE]] {{\[\[}}0, 1], [2]]
// CHECK: %[[DELTAROWS:.*]] = memref.collapse_shape %[[DELTA]]
// CHECK: fa.load_block %[[SINKS]][%[[HEAD]]] : memref<?xf32> -> vector<1xf32>
// CHECK: scf.for
// CHECK: scf.for
// CHECK: fa.load_block %[[LSEROWS]]
// CHECK: fa.load_block %[[DELTAROWS]]
// CHECK: math.exp2
// CHECK: fa.zero_columns
// CHECK: vector.multi_reduction <add>, %{{.*}} [1] : vector<1x1024xf32> to vector<1xf32>
// CHECK: %[[NEG:.*]] = arith.negf
// CHECK: fa.store_block %[[NEG]], %[[DSINKS]][%[[HEAD]]]
func.func @sinks(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t, %sinks: memref<?xf32>, %dsinks: memref<?xf32>) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t) sinks(%sinks : memref<?xf32>) dsinks(%dsinks : memref<?xf32>)
  return
}

// -----

!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
// Dropout: both kernels that recompute P take p, seed and offset and
// regenerate the forward's mask as factors (0 or 1 / (1 - p)) of the tile:
// the dK/dV kernel's transposed (rows are keys) for the query head of the
// group loop, multiplying P for dV and dP for dS; the dQ kernel's on dP.
// CHECK: dropout = #fa.kernel<op = attention_bwd{{.*}}#fa.param<"dq" : memref<?x?x?x64xbf16>>, #fa.param<"dropout_p" : f32>, #fa.param<"dropout_seed" : i64>, #fa.param<"dropout_offset" : i32>]
// CHECK: dropout_dkdv = #fa.kernel<op = attention_bwd_dkdv{{.*}}#fa.param<"dv" : memref<?x?x?x64xbf16>>, #fa.param<"dropout_p" : f32>, #fa.param<"dropout_seed" : i64>, #fa.param<"dropout_offset" : i32>]
// CHECK-LABEL: gpu.func @dropout_dkdv(
// CHECK-SAME: %[[P:[^:]*]]: f32, %[[SEED:[^:]*]]: i64, %[[OFFSET:[^:]*]]: i32)
// CHECK: %[[PROBS:.*]] = math.exp2
// CHECK: %[[KEEP:.*]] = fa.apply_dropout %{{.*}} rows(%{{.*}}) cols(%{{.*}}) batch_head(%{{.*}}) seed(%{{.*}}, %{{.*}}) offset(%[[OFFSET]]) p(%[[P]]) transposed : vector<64x64xf32>
// CHECK: %[[KEPT:.*]] = arith.mulf %[[PROBS]], %[[KEEP]]
// CHECK: %[[DPKEPT:.*]] = arith.mulf %{{.*}}, %[[KEEP]]
// CHECK: %[[KEPT16:.*]] = arith.truncf %[[KEPT]]
// CHECK: fa.tile_matmul %[[KEPT16]]
// CHECK: arith.subf %[[DPKEPT]]
// CHECK-LABEL: gpu.func @dropout(
// CHECK-SAME: %[[QP:[^:]*]]: f32, %[[QSEED:[^:]*]]: i64, %[[QOFFSET:[^:]*]]: i32)
// CHECK: %[[QKEEP:.*]] = fa.apply_dropout %{{.*}} offset(%[[QOFFSET]]) p(%[[QP]]) : vector<64x64xf32>
// CHECK: %[[QDP:.*]] = arith.mulf %{{.*}}, %[[QKEEP]]
// CHECK: arith.subf %[[QDP]]
func.func @dropout(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t, %p: f32, %seed: i64, %offset: i32) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t) dropout(%p, %seed, %offset)
  return
}

// -----

!t = memref<?x?x?x256xbf16>
!s = memref<?x?x?xf32>
// split_dkdv (the D=256 library tiles): the dK/dV kernel's grid z is
// dkdv_parts, and a uniform branch on the block's z builds two loop nests of
// one accumulator each. z = 0: S^T, P^T (times the dropout factors), dV +=
// P^T dO, no V tile, no dP^T; else V staged, S^T and dP^T, dS^T (dP^T times
// the same factors), dK += dS^T Q, scaled once. The delta and dQ kernels are
// those without split_dkdv, which only the dK/dV kernel's config records.
// CHECK: fa.kernels = {
// CHECK-SAME: split = #fa.kernel<op = attention_bwd, dtype = bf16, head_dim = 256, causal = true, {{.*}}config = #fa.tile<block_m = 64, block_n = 32, num_warps = 4, num_stages = 2, skip_unit_rescale = false, wgmma = true>, block = [128, 1, 1], grid = [query_tiles, batch_heads, one],
// CHECK-SAME: split_delta = #fa.kernel<op = attention_bwd_delta, {{.*}}config = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, skip_unit_rescale = false, wgmma = true>, block = [256, 1, 1], grid = [query_tiles, batch_heads, one],
// CHECK-SAME: split_dkdv = #fa.kernel<op = attention_bwd_dkdv, {{.*}}config = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, skip_unit_rescale = false, wgmma = true, split_dkdv = true>, block = [256, 1, 1], grid = [key_tiles, batch_kv_heads, dkdv_parts], params = [{{.*}}#fa.param<"dk" : {{.*}}>, #fa.param<"dv" : {{.*}}>, #fa.param<"dropout_p" : f32>
// CHECK-LABEL: gpu.func @split_dkdv(
// CHECK-SAME: %[[Q:[^:]*]]: memref<?x?x?x256xbf16>, %[[K:[^:]*]]: memref<?x?x?x256xbf16>, %[[V:[^:]*]]: memref<?x?x?x256xbf16>, %[[DO:[^:]*]]: memref<?x?x?x256xbf16>, %[[LSE:[^:]*]]: memref<?x?x?xf32>, %[[DL:[^:]*]]: memref<?x?x?xf32>, %[[DK:[^:]*]]: memref<?x?x?x256xbf16>, %[[DV:[^:]*]]: memref<?x?x?x256xbf16>, {{.*}}) workgroup(%[[KB:[^ ]*]] : memref<128x256xbf16, #gpu.address_space<workgroup>> {{.*}}, %[[VB:[^ ]*]] : {{.*}}, %[[QB:[^ ]*]] : memref<32x256xbf16, {{.*}}, %[[DOB:[^ ]*]] : {{.*}})
// CHECK: %[[KEY0:.*]] = arith.muli %{{.*}}, %c128
// CHECK: fa.stage_tile %[[K]][{{.*}}, %[[KEY0]]] into %[[KB]]
// CHECK-NOT: fa.stage_tile %[[V]]
// CHECK: %[[Z:.*]] = gpu.block_id z
// CHECK: %[[ISDV:.*]] = arith.cmpi eq, %[[Z]], %c0
// CHECK: scf.if %[[ISDV]] {
// CHECK:   %[[FIRST:.*]] = arith.divui %[[KEY0]], %c32
// CHECK:   scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<128x256xf32>)
// CHECK:     scf.for %{{.*}} = %[[FIRST]] to %{{.*}} iter_args(%[[DVACC:.*]] = %{{.*}}) -> (vector<128x256xf32>)
// CHECK:       fa.stage_tile %[[Q]]{{.*}} into %[[QB]]
// CHECK:       fa.stage_tile %[[DO]]{{.*}} into %[[DOB]]
// CHECK:       %[[ST:.*]] = fa.tile_matmul %[[KB]], %[[QB]], %{{.*}} transpose_b
// CHECK-NOT:   fa.tile_matmul
// CHECK:       fa.apply_mask %[[ST]] {{.*}} causal transposed
// CHECK:       %[[PT:.*]] = math.exp2
// CHECK:       %[[KEEP:.*]] = fa.apply_dropout {{.*}} transposed
// CHECK:       %[[KEPT:.*]] = arith.mulf %[[PT]], %[[KEEP]]
// CHECK:       %[[KEPT16:.*]] = arith.truncf %[[KEPT]]
// CHECK:       %[[NEWDV:.*]] = fa.tile_matmul %[[KEPT16]], %[[DOB]], %[[DVACC]] :
// CHECK-NEXT:  scf.yield %[[NEWDV]] : vector<128x256xf32>
// CHECK:     } {fa.copy_loop}
// CHECK-NOT: arith.mulf
// CHECK:   fa.store_tile %{{.*}}, %[[DV]][{{.*}}, %[[KEY0]]]
// CHECK-NOT: fa.store_tile
// CHECK: } else {
// CHECK:   fa.stage_tile %[[V]][{{.*}}, %[[KEY0]]] into %[[VB]]
// CHECK:   scf.for {{.*}} -> (vector<128x256xf32>)
// CHECK:     scf.for {{.*}} iter_args(%[[DKACC:.*]] = %{{.*}}) -> (vector<128x256xf32>)
// CHECK:       %[[ST2:.*]] = fa.tile_matmul %[[KB]], %[[QB]], %{{.*}} transpose_b
// CHECK:       %[[DPT:.*]] = fa.tile_matmul %[[VB]], %[[DOB]], %{{.*}} transpose_b
// CHECK:       fa.apply_mask %[[ST2]]
// CHECK:       %[[KEEP2:.*]] = fa.apply_dropout {{.*}} transposed
// CHECK:       %[[DPKEPT:.*]] = arith.mulf %[[DPT]], %[[KEEP2]]
// CHECK:       fa.column_broadcast %[[DL]]
// CHECK:       arith.subf %[[DPKEPT]]
// CHECK:       %[[NEWDK:.*]] = fa.tile_matmul %{{.*}}, %[[QB]], %[[DKACC]] :
// CHECK-NEXT:  scf.yield %[[NEWDK]] : vector<128x256xf32>
// CHECK:     } {fa.copy_loop}
// CHECK:   arith.mulf %{{.*}}, %cst{{.*}} : vector<128x256xf32>
// CHECK:   fa.store_tile %{{.*}}, %[[DK]][{{.*}}, %[[KEY0]]]
// CHECK: }
// CHECK-NEXT: gpu.return
// OPTIONS-LABEL: gpu.func @split_dkdv(
// OPTIONS: scf.if
func.func @split(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t, %p: f32, %seed: i64, %offset: i32) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 32, dq_num_warps = 4, wgmma = true, split_dkdv = true>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t) causal dropout(%p, %seed, %offset)
  return
}

// -----

!t = memref<?x?x?x256xbf16>
!s = memref<?x?x?xf32>
// split_dkdv holds one accumulator, but still both score-like tiles.
// expected-error @+1 {{fa-tile-attention-grad: the dK/dV kernel's S^T, dP^T (block_m x block_n) and dK or dV (block_m x head_dim, split_dkdv) give each of the 256 threads 384 values to hold, more than 256 for 'bf16'; use more warps or smaller tiles}}
func.func @split_dkdv_registers(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 256, num_warps = 8, num_stages = 1, wgmma = true, split_dkdv = true>} {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}
