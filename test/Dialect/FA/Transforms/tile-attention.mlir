// RUN: fa-opt %s --fa-tile-attention --split-input-file --verify-diagnostics | FileCheck %s
// RUN: fa-opt %s --fa-tile-attention="block-m=128 block-n=32 num-warps=8" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=CONFIG
// RUN: not fa-opt %s --split-input-file --fa-tile-attention="num-warps=9223372036854775807" 2>&1 | FileCheck %s --check-prefix=WARPS

// The function becomes a kernel; grid mapping explicit; three key loops.
// CHECK: module attributes {fa.kernels = {attn = #fa.kernel<op = attention_fwd, dtype = bf16, head_dim = 64, causal = true, scale = 1.250000e-01 : f32, config = #fa.tile<block_m = 64, block_n = 64, num_warps = 4, num_stages = 1>, block = [128, 1, 1], grid = [query_tiles, batch_heads, one], params = [#fa.param<"q" : memref<?x?x?x64xbf16>>, #fa.param<"k" : memref<?x?x?x64xbf16>>, #fa.param<"v" : memref<?x?x?x64xbf16>>, #fa.param<"out" : memref<?x?x?x64xbf16>>, #fa.param<"lse" : memref<?x?x?xf32>>]>}, gpu.container_module}
// CHECK-NOT: func.func
// CHECK: gpu.module @attn
// CHECK: gpu.func @attn(%[[Q:.*]]: memref<?x?x?x64xbf16>, %[[K:.*]]: memref<?x?x?x64xbf16>, %[[V:.*]]: memref<?x?x?x64xbf16>, %[[O:.*]]: memref<?x?x?x64xbf16>, %[[L:.*]]: memref<?x?x?xf32>) workgroup(%[[KB:.*]] : memref<64x64xbf16, #gpu.address_space<workgroup>> {llvm.align = 128 : i64}, %[[VB:.*]] : memref<64x64xbf16, #gpu.address_space<workgroup>> {llvm.align = 128 : i64}) kernel attributes {fa.tile = #fa.tile<block_m = 64, block_n = 64, num_warps = 4, num_stages = 1>, known_block_size = array<i32: 128, 1, 1>}
// Causal: block x takes query tile (tiles - 1 - x), so the longest tiles
// start first.
// CHECK: %[[BX:.*]] = gpu.block_id x
// CHECK: %[[NQ:.*]] = arith.ceildivui %{{.*}}, %c64
// CHECK: %[[REV:.*]] = arith.subi %[[NQ]], %[[BX]]
// CHECK: %[[TILE:.*]] = arith.subi %[[REV]], %c1
// CHECK-DAG: %[[BH:.*]] = gpu.block_id y
// CHECK-DAG: %[[KVLEN:.*]] = memref.dim %[[K]], %c2
// CHECK: %[[ROW0:.*]] = arith.muli %[[TILE]], %c64
// CHECK: %[[NT:.*]] = arith.ceildivui %[[KVLEN]], %c64
// CHECK: %[[QT:.*]] = fa.load_tile %[[Q]][{{.*}}, {{.*}}, %[[ROW0]]] : memref<?x?x?x64xbf16> -> vector<64x64xbf16>
// CHECK: %[[MAX:.*]] = scf.for %[[J:.*]] = %c0 to %[[NT]]
// CHECK:   fa.stage_tile %[[K]][{{.*}}] into %[[KB]]
// CHECK:   fa.tile_matmul %[[QT]], %[[KB]], %{{.*}} transpose_b
// CHECK:   fa.apply_mask %{{.*}} rows(%[[ROW0]]) cols(%{{.*}}) kv_len(%[[KVLEN]]) causal
// CHECK:   vector.multi_reduction <maxnumf>
// CHECK: } {fa.kv_loop, fa.softmax_phase = #fa<phase max>}
// CHECK: %[[SUM:.*]] = scf.for
// CHECK:   math.exp
// CHECK:   vector.multi_reduction <add>
// CHECK: } {fa.kv_loop, fa.softmax_phase = #fa<phase sum>}
// CHECK: %[[ACC:.*]] = scf.for
// CHECK:   arith.truncf %{{.*}} : vector<64x64xf32> to vector<64x64xbf16>
// CHECK:   fa.stage_tile %[[V]][{{.*}}] into %[[VB]]
// CHECK:   fa.tile_matmul %{{.*}}, %[[VB]], %{{.*}} :
// CHECK: } {fa.kv_loop, fa.softmax_phase = #fa<phase accumulate>}
// Normalisation: one reciprocal per row, one multiply per element.
// CHECK: %[[INV:.*]] = arith.divf %{{.*}}, %[[SUM]] : vector<64xf32>
// CHECK: %[[INVB:.*]] = fa.row_broadcast %[[INV]]
// CHECK: arith.mulf %[[ACC]], %[[INVB]]
// CHECK: fa.store_tile %{{.*}}, %[[O]][{{.*}}, {{.*}}, %[[ROW0]]]
// CHECK: math.log2 %[[SUM]]
// CHECK: fa.store_rows %{{.*}}, %[[L]]
// CONFIG: config = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 1>,
// CONFIG: known_block_size = array<i32: 256, 1, 1>
func.func @attn(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                %o: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32>) {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>) lse(%lse : memref<?x?x?xf32>) causal scale(0.125)
  return
}

// -----

// A per-function fa.tile overrides the pass options.
// CHECK-LABEL: gpu.func @tuned
// CHECK-SAME: workgroup(%{{.*}} : memref<32x128xf16, #gpu.address_space<workgroup>> {llvm.align = 128 : i64}
// CHECK-SAME: known_block_size = array<i32: 64, 1, 1>
// Not causal: block x takes query tile x.
// CHECK: %[[TX:.*]] = gpu.block_id x
// CHECK-NOT: arith.subi
// CHECK: arith.muli %[[TX]], %c32
// CHECK-NOT: fa.store_rows
// CONFIG-LABEL: gpu.func @tuned
// CONFIG-SAME: known_block_size = array<i32: 64, 1, 1>
func.func @tuned(%q: memref<1x2x100x128xf16>, %k: memref<1x2x100x128xf16>, %v: memref<1x2x100x128xf16>,
                 %o: memref<1x2x100x128xf16>) attributes {fa.tile = #fa.tile<block_m = 32, block_n = 32, num_warps = 2>} {
  fa.attention ins(%q, %k, %v : memref<1x2x100x128xf16>, memref<1x2x100x128xf16>, memref<1x2x100x128xf16>)
               outs(%o : memref<1x2x100x128xf16>)
  return
}

// -----

// expected-error @+1 {{fa-tile-attention: block-m (48) must be 16 or 32 x num-warps (4): each warp owns one or two 16-row blocks of queries}}
func.func @bad_block_m(%q: memref<1x1x8x64xf16>) attributes {fa.tile = #fa.tile<block_m = 48, num_warps = 4>} {
  fa.attention ins(%q, %q, %q : memref<1x1x8x64xf16>, memref<1x1x8x64xf16>, memref<1x1x8x64xf16>) outs(%q : memref<1x1x8x64xf16>)
  return
}

// -----

// expected-error @+1 {{fa-tile-attention: block-n (24) must be a multiple of 16 from 16 to 256}}
func.func @bad_block_n(%q: memref<1x1x8x64xf16>) attributes {fa.tile = #fa.tile<block_n = 24>} {
  fa.attention ins(%q, %q, %q : memref<1x1x8x64xf16>, memref<1x1x8x64xf16>, memref<1x1x8x64xf16>) outs(%q : memref<1x1x8x64xf16>)
  return
}

// -----

func.func @not_alone(%q: memref<1x1x8x64xf16>) {
  // expected-error @+1 {{expects to be the only operation of a func.func (which becomes the kernel) besides the return and pure scalar computations of its arguments before it}}
  fa.attention ins(%q, %q, %q : memref<1x1x8x64xf16>, memref<1x1x8x64xf16>, memref<1x1x8x64xf16>) outs(%q : memref<1x1x8x64xf16>)
  fa.attention ins(%q, %q, %q : memref<1x1x8x64xf16>, memref<1x1x8x64xf16>, memref<1x1x8x64xf16>) outs(%q : memref<1x1x8x64xf16>)
  return
}

// -----

// f32 may keep the query tile in shared memory (to spare registers): staged
// once, then read by the score matmul from there.
// CHECK-LABEL: gpu.func @query_in_shared
// CHECK-SAME: workgroup(%[[KB:.*]] : memref<16x128xf32, #gpu.address_space<workgroup>> {llvm.align = 128 : i64}, %{{.*}} : memref<16x128xf32, #gpu.address_space<workgroup>> {llvm.align = 128 : i64}, %[[QB:.*]] : memref<64x128xf32, #gpu.address_space<workgroup>> {llvm.align = 128 : i64})
// CHECK-NOT: fa.load_tile
// CHECK: fa.stage_tile %{{.*}} into %[[QB]]
// CHECK: fa.tile_matmul %[[QB]], %[[KB]], %{{.*}} transpose_b : memref<64x128xf32, #gpu.address_space<workgroup>>
// CONFIG-LABEL: gpu.func @query_in_shared
func.func @query_in_shared(%q: memref<1x2x100x128xf32>) attributes {fa.tile = #fa.tile<block_m = 64, block_n = 16, num_warps = 4, q_in_shared = true>} {
  fa.attention ins(%q, %q, %q : memref<1x2x100x128xf32>, memref<1x2x100x128xf32>, memref<1x2x100x128xf32>) outs(%q : memref<1x2x100x128xf32>)
  return
}

// -----

// f16/bf16 may keep the query tile in shared memory too (for 32 rows per
// warp at D=128, where a register Q would not fit beside the accumulator).
// CHECK-LABEL: gpu.func @query_in_shared_half
// CHECK: fa.stage_tile %{{.*}} into %[[QH:.*]] : memref<1x1x8x64xf16>, memref<128x64xf16, #gpu.address_space<workgroup>>
// CHECK: fa.tile_matmul %[[QH]], %{{.*}} transpose_b : memref<128x64xf16, #gpu.address_space<workgroup>>
// CONFIG-LABEL: gpu.func @query_in_shared_half
// CONFIG-SAME: known_block_size = array<i32: 128, 1, 1>
func.func @query_in_shared_half(%q: memref<1x1x8x64xf16>) attributes {fa.tile = #fa.tile<block_m = 128, num_warps = 4, q_in_shared = true>} {
  fa.attention ins(%q, %q, %q : memref<1x1x8x64xf16>, memref<1x1x8x64xf16>, memref<1x1x8x64xf16>) outs(%q : memref<1x1x8x64xf16>)
  return
}

// -----

// expected-error @+1 {{fa-tile-attention: num-stages 2 needs pipeline_copies: the second buffers only serve copies started ahead}}
func.func @two_stages_without_pipelining(%q: memref<1x1x8x64xf16>) attributes {fa.tile = #fa.tile<num_stages = 2, pipeline_copies = false>} {
  fa.attention ins(%q, %q, %q : memref<1x1x8x64xf16>, memref<1x1x8x64xf16>, memref<1x1x8x64xf16>) outs(%q : memref<1x1x8x64xf16>)
  return
}

// -----

// expected-error @+1 {{fa-tile-attention: overlap_softmax needs wgmma = true (products that run while the warps work) and num_stages = 2 (two slots per tile)}}
func.func @overlap_without_wgmma(%q: memref<1x1x8x64xf16>) attributes {fa.tile = #fa.tile<num_stages = 2, overlap_softmax = true>} {
  fa.attention ins(%q, %q, %q : memref<1x1x8x64xf16>, memref<1x1x8x64xf16>, memref<1x1x8x64xf16>) outs(%q : memref<1x1x8x64xf16>)
  return
}

// -----

// expected-error @+1 {{fa-tile-attention: overlap_softmax needs wgmma = true (products that run while the warps work) and num_stages = 2 (two slots per tile)}}
func.func @overlap_single_stage(%q: memref<1x1x8x64xf16>) attributes {fa.tile = #fa.tile<block_m = 64, block_n = 64, num_warps = 4, q_in_shared = true, wgmma = true, overlap_softmax = true>} {
  fa.attention ins(%q, %q, %q : memref<1x1x8x64xf16>, memref<1x1x8x64xf16>, memref<1x1x8x64xf16>) outs(%q : memref<1x1x8x64xf16>)
  return
}

// -----

// Limits: each tile size against what the lowering handles (sizes out of
// any kernel's range are #fa.tile verifier errors, at the attribute). Past
// them the lowering unrolled the copies of ever longer tiles (minutes, then
// out of memory), a product of warps overflowed (a kernel of 0 threads), or
// a later pass refused the kernel in terms of ops the user never wrote.
// The num-warps option is checked like the entry:
// WARPS: error: fa-tile-attention: num-warps (9223372036854775807) must be a power of two from 1 to 16

!t = memref<?x?x?x64xbf16>
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

!t = memref<?x?x?x64xbf16>
// #fa.tile describes both directions; the forward refuses the dQ kernel's.
// expected-error @+1 {{fa-tile-attention: dq_block_m, dq_block_n and dq_num_warps configure the backward's dQ kernel (fa-tile-attention-grad)}}
func.func @backward_entry(%q: !t, %k: !t, %v: !t, %o: !t) attributes {fa.tile = #fa.tile<block_m = 64, dq_block_m = 64>} {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t)
  return
}

// -----

!t = memref<?x?x?x64xbf16>
// A mask and a score region are copied onto every tile of scores, the score
// region first (it never sees a masked -inf), with the captures as kernel
// parameters named by fa.name; the function's fa.variant names the kernel's
// variant. A prelude of pure scalar ops is recomputed in the kernel.
// CHECK: fa.kernels = {regions = #fa.kernel<{{.*}}variant = "prefix_softcap">
// CHECK-LABEL: gpu.func @regions(
// CHECK-SAME: %{{.*}}: index, %[[CAP:.*]]: f32)
// CHECK: %[[SHIFT:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: scf.for
// CHECK: %[[SCORED:.*]] = fa.score_tile %{{.*}} rows(%{{.*}}) cols(%{{.*}}) at(%{{.*}}, %{{.*}}) captures(%[[SHIFT]], %[[CAP]] : index, f32)
// CHECK: math.tanh
// CHECK: fa.mask_tile %[[SCORED]] rows(%{{.*}}) cols(%{{.*}}) kv_len(%{{.*}}) at(%{{.*}}, %{{.*}}) captures(%[[SHIFT]], %[[CAP]] : index, f32) causal
// CHECK: arith.cmpi slt
// CHECK: fa.yield %{{.*}} : i1
func.func @regions(%q: !t, %k: !t, %v: !t, %o: !t, %prefix: index {fa.name = "prefix"}, %cap: f32 {fa.name = "cap"}) attributes {fa.variant = "prefix_softcap"} {
  %one = arith.constant 1 : index
  %shifted = arith.addi %prefix, %one : index
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t) causal captures(%shifted, %cap : index, f32) mask {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %p: index, %c: f32):
    %keep = arith.cmpi slt, %j, %p : index
    fa.yield %keep : i1
  } score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %p: index, %c: f32):
    %t = math.tanh %s : f32
    fa.yield %t : f32
  }
  return
}

// -----

!t = memref<?x?x?x64xbf16>
func.func @window(%q: !t, %k: !t, %v: !t, %o: !t, %left: index, %right: index) {
  // expected-error @+1 {{fa-tile-attention: named variants (causal_bottom_right, window, document, softcap, alibi) are compiled as regions: run --fa-expand-attention-variants first (fa-to-ptx does)}}
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t) window(%left, %right)
  return
}

// -----

!t = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
// Sinks join the softmax after the key loops: the head's sink logit is read
// once, the row maximum becomes max(m, sink), the sum and the accumulator
// are rescaled by e^(m - m') and the sum gains e^(sink - m'); the output is
// normalised by that sum and the log-sum-exp is m' + log(l'). The sum is
// positive, so no row needs the no-key guard.
// CHECK: fa.kernels = {sinks = #fa.kernel<op = attention_fwd{{.*}}params = [{{.*}}#fa.param<"lse" : memref<?x?x?xf32>>, #fa.param<"sinks" : memref<?xf32>>]
// CHECK-LABEL: gpu.func @sinks(
// CHECK-SAME: %[[SINKS:[^:]*]]: memref<?xf32>)
// CHECK: %[[HEAD:.*]] = arith.remui
// CHECK-COUNT-3: scf.for
// CHECK: %[[SINK:.*]] = memref.load %[[SINKS]][%[[HEAD]]] : memref<?xf32>
// CHECK: %[[SINKROWS:.*]] = vector.broadcast %[[SINK]] : f32 to vector<64xf32>
// CHECK: %[[MAX:.*]] = arith.maximumf %{{.*}}, %[[SINKROWS]] : vector<64xf32>
// CHECK: %[[RESCALE:.*]] = math.exp2
// CHECK: %[[SUM:.*]] = arith.addf %{{.*}}, %{{.*}} : vector<64xf32>
// CHECK: %[[ACC:.*]] = arith.mulf %{{.*}}, %{{.*}} : vector<64x64xf32>
// CHECK: %[[INV:.*]] = arith.divf %{{.*}}, %[[SUM]] : vector<64xf32>
// CHECK-NOT: arith.select
// CHECK: fa.store_tile
// CHECK: math.log2 %[[SUM]]
// CHECK: arith.addf %[[MAX]], %{{.*}} : vector<64xf32>
// CHECK: fa.store_rows
func.func @sinks(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !s, %sinks: memref<?xf32>) {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t) lse(%lse : !s) sinks(%sinks : memref<?xf32>) causal
  return
}

// -----

!t = memref<?x?x?x64xbf16>
// Dropout: p, seed and offset are kernel parameters; the accumulate loop
// drops the probabilities it multiplies with V (the sum loop's are those of
// the softmax), at the tile's (row, column) of (batch, head) = b * H + h,
// with the seed split into the Philox key's two words.
// CHECK: fa.kernels = {dropout = #fa.kernel<{{.*}}params = [{{.*}}#fa.param<"dropout_p" : f32>, #fa.param<"dropout_seed" : i64>, #fa.param<"dropout_offset" : i32>]
// CHECK-LABEL: gpu.func @dropout(
// CHECK-SAME: %[[P:[^:]*]]: f32, %[[SEED:[^:]*]]: i64, %[[OFFSET:[^:]*]]: i32)
// CHECK: %[[HIGH:.*]] = arith.shrui %[[SEED]]
// CHECK: %[[LO:.*]] = arith.trunci %[[SEED]] : i64 to i32
// CHECK: %[[HI:.*]] = arith.trunci %[[HIGH]] : i64 to i32
// CHECK: %[[BH:.*]] = arith.index_castui %{{.*}} : index to i32
// CHECK: #fa<phase sum>
// CHECK: %[[PROBS:.*]] = math.exp
// CHECK: %[[COL:.*]] = arith.muli
// CHECK-NEXT: %[[DROPPED:.*]] = fa.apply_dropout %[[PROBS]] rows(%{{.*}}) cols(%[[COL]]) batch_head(%[[BH]]) seed(%[[LO]], %[[HI]]) offset(%[[OFFSET]]) p(%[[P]]) : vector<64x64xf32>
// CHECK-NEXT: arith.truncf %[[DROPPED]]
// CHECK: #fa<phase accumulate>
func.func @dropout(%q: !t, %k: !t, %v: !t, %o: !t, %p: f32, %seed: i64, %offset: i32) {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t) dropout(%p, %seed, %offset)
  return
}

// -----

!t = memref<?x?x?x64xbf16>
// #fa.tile describes both directions; the forward refuses the dK/dV kernel's
// split.
// expected-error @+1 {{fa-tile-attention: split_dkdv configures the backward's dK/dV kernel}}
func.func @split_dkdv(%q: !t, %k: !t, %v: !t, %o: !t) attributes {fa.tile = #fa.tile<block_m = 64, split_dkdv = true>} {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t)
  return
}

// -----

!t = memref<?x?x?x64xbf16>
// ... and the backward's fused dQ.
// expected-error @+1 {{fa-tile-attention: fuse_dq configures the backward's dK/dV kernel}}
func.func @fuse_dq(%q: !t, %k: !t, %v: !t, %o: !t) attributes {fa.tile = #fa.tile<block_m = 64, wgmma = true, fuse_dq = true>} {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t)
  return
}
