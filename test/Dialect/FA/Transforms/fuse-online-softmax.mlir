// RUN: fa-opt %s --fa-fuse-online-softmax --split-input-file --verify-diagnostics | FileCheck %s

// Input: the three key loops of the safe softmax as fa-tile-attention
// writes them (one 16 x 16 score tile per iteration, head_dim 64, scale
// 0.125), reduced to what the pass reads.

// One loop is left. It carries the running maximum m of the raw scores, the
// running sum l and the unnormalised accumulator, from the initial values of
// the three loops. Each tile's scores are computed once, not scaled (the
// mask takes the product directly): the scale goes into the exponent,
// exp2(s c - m c) with c = 0.125 * log2(e), one fma per score. When the
// maximum grows, l and acc are rescaled by alpha = exp2((m - m_new) c); a
// row with every key masked so far (m_new = -inf) subtracts 0 instead.
// CHECK-LABEL: gpu.func @three_phases
// CHECK-SAME: workgroup(%[[KB:[^ ]+]] : {{.*}}, %[[VB:[^ ]+]] :
// CHECK-DAG: %[[NEG_INF:.*]] = arith.constant dense<0xFF800000> : vector<16xf32>
// CHECK-DAG: %[[ZERO_ROWS:.*]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK-DAG: %[[ZERO_ACC:.*]] = arith.constant dense<0.000000e+00> : vector<16x64xf32>
// CHECK-DAG: %[[C:.*]] = arith.constant dense<0.180336878> : vector<16x16xf32>
// CHECK-DAG: %[[C_ROWS:.*]] = arith.constant dense<0.180336878> : vector<16xf32>
// CHECK: %[[R:.*]]:3 = scf.for %[[J:.*]] = %{{.*}} iter_args(%[[M:.*]] = %[[NEG_INF]], %[[L:.*]] = %[[ZERO_ROWS]], %[[ACC:.*]] = %[[ZERO_ACC]]) -> (vector<16xf32>, vector<16xf32>, vector<16x64xf32>)
// CHECK: fa.stage_tile {{.*}} into %[[KB]]
// CHECK: %[[S:.*]] = fa.tile_matmul %{{.*}}, %[[KB]], %{{.*}} transpose_b
// CHECK: %[[MASKED:.*]] = fa.apply_mask %[[S]] rows
// CHECK: %[[M_NEW:.*]] = vector.multi_reduction <maxnumf>, %[[MASKED]], %[[M]] [1]
// CHECK: %[[EMPTY:.*]] = arith.cmpf oeq, %[[M_NEW]], %{{.*}}
// CHECK: %[[M_SAFE:.*]] = arith.select %[[EMPTY]], %{{.*}}, %[[M_NEW]]
// CHECK: %[[DIFF:.*]] = arith.subf %[[M]], %[[M_SAFE]]
// CHECK: %[[DIFF_C:.*]] = arith.mulf %[[DIFF]], %[[C_ROWS]]
// CHECK: %[[ALPHA:.*]] = math.exp2 %[[DIFF_C]] : vector<16xf32>
// CHECK: %[[MC:.*]] = arith.mulf %[[M_SAFE]], %[[C_ROWS]]
// CHECK: %[[NEG_MC:.*]] = arith.negf %[[MC]]
// CHECK: %[[NEG_MCB:.*]] = fa.row_broadcast %[[NEG_MC]]
// CHECK: %[[E:.*]] = math.fma %[[MASKED]], %[[C]], %[[NEG_MCB]]
// CHECK: %[[P:.*]] = math.exp2 %[[E]] : vector<16x16xf32>
// CHECK: %[[L_SCALED:.*]] = arith.mulf %[[L]], %[[ALPHA]]
// CHECK: %[[L_NEW:.*]] = vector.multi_reduction <add>, %[[P]], %[[L_SCALED]] [1]
// CHECK: %[[ALPHAB:.*]] = fa.row_broadcast %[[ALPHA]]
// CHECK: %[[ACC_SCALED:.*]] = arith.mulf %[[ACC]], %[[ALPHAB]]
// The value half of the accumulate loop, on these probabilities.
// CHECK: %[[PH:.*]] = arith.truncf %[[P]] : vector<16x16xf32> to vector<16x16xf16>
// CHECK-NOT: fa.tile_matmul
// CHECK: fa.stage_tile {{.*}} into %[[VB]]
// CHECK-NEXT: %[[ACC_NEW:.*]] = fa.tile_matmul %[[PH]], %[[VB]], %[[ACC_SCALED]] :
// CHECK-NEXT: scf.yield %[[M_NEW]], %[[L_NEW]], %[[ACC_NEW]]
// CHECK-NEXT: } {fa.kv_loop, fa.softmax_phase = #fa<phase online>}
// CHECK-NOT: scf.for
// CHECK-NOT: math.exp %
// Users of the maximum get it in scaled units (m * 0.125); those of the sum
// and of the accumulator, the loop's l and acc.
// CHECK: %[[SCALE:.*]] = arith.constant dense<1.250000e-01> : vector<16xf32>
// CHECK-NEXT: %[[M_SCALED:.*]] = arith.mulf %[[R]]#0, %[[SCALE]]
// CHECK: arith.divf %{{.*}}, %[[R]]#1
// CHECK: arith.mulf %[[R]]#2
// CHECK: math.log %[[R]]#1
// CHECK: arith.addf %[[M_SCALED]]
!kv = memref<?x?x?x64xf16>
!smem = memref<16x64xf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @three_phases(%k: !kv, %v: !kv, %o: !kv, %lse: memref<?x?x?xf32>, %q: vector<16x64xf16>,
                         %b: index, %h: index, %row0: index, %tiles: index, %kv_len: index)
      workgroup(%kb : !smem, %vb : !smem) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %neg_inf = arith.constant dense<0xFF800000> : vector<16xf32>
    %zero_rows = arith.constant dense<0.0> : vector<16xf32>
    %one_rows = arith.constant dense<1.0> : vector<16xf32>
    %zero_s = arith.constant dense<0.0> : vector<16x16xf32>
    %zero_acc = arith.constant dense<0.0> : vector<16x64xf32>
    %scale = arith.constant dense<0.125> : vector<16x16xf32>
    %max = scf.for %j = %c0 to %tiles step %c1 iter_args(%m = %neg_inf) -> (vector<16xf32>) {
      %col = arith.muli %j, %c16 : index
      fa.stage_tile %k[%b, %h, %col] into %kb : !kv, !smem
      %s = fa.tile_matmul %q, %kb, %zero_s transpose_b : vector<16x64xf16>, !smem, vector<16x16xf32>
      %scaled = arith.mulf %s, %scale : vector<16x16xf32>
      %masked = fa.apply_mask %scaled rows(%row0) cols(%col) kv_len(%kv_len) causal : vector<16x16xf32>
      %m_new = vector.multi_reduction <maxnumf>, %masked, %m [1] : vector<16x16xf32> to vector<16xf32>
      scf.yield %m_new : vector<16xf32>
    } {fa.kv_loop, fa.softmax_phase = #fa<phase max>}
    %sum = scf.for %j = %c0 to %tiles step %c1 iter_args(%l = %zero_rows) -> (vector<16xf32>) {
      %col = arith.muli %j, %c16 : index
      fa.stage_tile %k[%b, %h, %col] into %kb : !kv, !smem
      %s = fa.tile_matmul %q, %kb, %zero_s transpose_b : vector<16x64xf16>, !smem, vector<16x16xf32>
      %scaled = arith.mulf %s, %scale : vector<16x16xf32>
      %masked = fa.apply_mask %scaled rows(%row0) cols(%col) kv_len(%kv_len) causal : vector<16x16xf32>
      %mb = fa.row_broadcast %max : vector<16xf32> -> vector<16x16xf32>
      %d = arith.subf %masked, %mb : vector<16x16xf32>
      %p = math.exp %d : vector<16x16xf32>
      %l_new = vector.multi_reduction <add>, %p, %l [1] : vector<16x16xf32> to vector<16xf32>
      scf.yield %l_new : vector<16xf32>
    } {fa.kv_loop, fa.softmax_phase = #fa<phase sum>}
    %acc = scf.for %j = %c0 to %tiles step %c1 iter_args(%a = %zero_acc) -> (vector<16x64xf32>) {
      %col = arith.muli %j, %c16 : index
      fa.stage_tile %k[%b, %h, %col] into %kb : !kv, !smem
      %s = fa.tile_matmul %q, %kb, %zero_s transpose_b : vector<16x64xf16>, !smem, vector<16x16xf32>
      %scaled = arith.mulf %s, %scale : vector<16x16xf32>
      %masked = fa.apply_mask %scaled rows(%row0) cols(%col) kv_len(%kv_len) causal : vector<16x16xf32>
      %mb = fa.row_broadcast %max : vector<16xf32> -> vector<16x16xf32>
      %d = arith.subf %masked, %mb : vector<16x16xf32>
      %p = math.exp %d : vector<16x16xf32>
      %ph = arith.truncf %p : vector<16x16xf32> to vector<16x16xf16>
      %vcol = arith.muli %j, %c16 : index
      fa.stage_tile %v[%b, %h, %vcol] into %vb : !kv, !smem
      %a_new = fa.tile_matmul %ph, %vb, %a : vector<16x16xf16>, !smem, vector<16x64xf32>
      scf.yield %a_new : vector<16x64xf32>
    } {fa.kv_loop, fa.softmax_phase = #fa<phase accumulate>}
    %inv = arith.divf %one_rows, %sum : vector<16xf32>
    %invb = fa.row_broadcast %inv : vector<16xf32> -> vector<16x64xf32>
    %out = arith.mulf %acc, %invb : vector<16x64xf32>
    %outh = arith.truncf %out : vector<16x64xf32> to vector<16x64xf16>
    fa.store_tile %outh, %o[%b, %h, %row0] : vector<16x64xf16>, !kv
    %log = math.log %sum : vector<16xf32>
    %lse_rows = arith.addf %max, %log : vector<16xf32>
    fa.store_rows %lse_rows, %lse[%b, %h, %row0] : vector<16xf32>, memref<?x?x?xf32>
    gpu.return
  }
}

// -----

// A loop that is already online (the pass ran before) is left as it is.
// CHECK-LABEL: gpu.func @already_online
// CHECK: scf.for
// CHECK-NEXT: } {fa.kv_loop, fa.softmax_phase = #fa<phase online>}
gpu.module @m {
  gpu.func @already_online(%tiles: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %j = %c0 to %tiles step %c1 {
    } {fa.kv_loop, fa.softmax_phase = #fa<phase online>}
    gpu.return
  }
}

// -----

// Split key loops (after fa-eliminate-causal-tiles) cannot be fused.
gpu.module @m {
  gpu.func @split_max(%tiles: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %j = %c0 to %tiles step %c1 {
    } {fa.softmax_phase = #fa<phase max>}
    // expected-error @+1 {{fa-fuse-online-softmax: more than one 'max' loop (run it before fa-eliminate-causal-tiles)}}
    scf.for %j = %c0 to %tiles step %c1 {
    } {fa.softmax_phase = #fa<phase max>}
    gpu.return
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{fa-fuse-online-softmax: expects the max, sum and accumulate loops together}}
  gpu.func @max_alone(%tiles: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %j = %c0 to %tiles step %c1 {
    } {fa.softmax_phase = #fa<phase max>}
    gpu.return
  }
}

// -----

// Each phase loop carries exactly its one value (here the sum loop carries
// none; this crashed the pass before).
gpu.module @m {
  // expected-error @+1 {{fa-fuse-online-softmax: expects the 'sum' loop to carry one value, not 0}}
  gpu.func @sum_carries_nothing(%tiles: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = arith.constant dense<0.0> : vector<16xf32>
    %acc = arith.constant dense<0.0> : vector<16x64xf32>
    %m = scf.for %j = %c0 to %tiles step %c1 iter_args(%m = %rows) -> (vector<16xf32>) {
      scf.yield %m : vector<16xf32>
    } {fa.softmax_phase = #fa<phase max>}
    scf.for %j = %c0 to %tiles step %c1 {
    } {fa.softmax_phase = #fa<phase sum>}
    %o = scf.for %j = %c0 to %tiles step %c1 iter_args(%a = %acc) -> (vector<16x64xf32>) {
      scf.yield %a : vector<16x64xf32>
    } {fa.softmax_phase = #fa<phase accumulate>}
    gpu.return
  }
}

// -----

// The max loop must reduce into its carried value (here it restarts from
// zero every tile).
gpu.module @m {
  // expected-error @+1 {{fa-fuse-online-softmax: no row-maximum reduction in the max loop}}
  gpu.func @no_max_reduction(%tiles: index, %s: vector<16x16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = arith.constant dense<0.0> : vector<16xf32>
    %acc = arith.constant dense<0.0> : vector<16x64xf32>
    %m = scf.for %j = %c0 to %tiles step %c1 iter_args(%m = %rows) -> (vector<16xf32>) {
      %max = vector.multi_reduction <maxnumf>, %s, %rows [1] : vector<16x16xf32> to vector<16xf32>
      scf.yield %max : vector<16xf32>
    } {fa.softmax_phase = #fa<phase max>}
    %l = scf.for %j = %c0 to %tiles step %c1 iter_args(%l = %rows) -> (vector<16xf32>) {
      scf.yield %l : vector<16xf32>
    } {fa.softmax_phase = #fa<phase sum>}
    %o = scf.for %j = %c0 to %tiles step %c1 iter_args(%a = %acc) -> (vector<16x64xf32>) {
      scf.yield %a : vector<16x64xf32>
    } {fa.softmax_phase = #fa<phase accumulate>}
    gpu.return
  }
}

// -----

// The scale is what moves into the exponent: the scores must be multiplied
// by a constant before the mask.
gpu.module @m {
  // expected-error @+1 {{fa-fuse-online-softmax: expects scores scaled by a constant before the mask}}
  gpu.func @unscaled(%tiles: index, %s: vector<16x16xf32>, %scale: vector<16x16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = arith.constant dense<0.0> : vector<16xf32>
    %acc = arith.constant dense<0.0> : vector<16x64xf32>
    %m = scf.for %j = %c0 to %tiles step %c1 iter_args(%m = %rows) -> (vector<16xf32>) {
      %scaled = arith.mulf %s, %scale : vector<16x16xf32>
      %max = vector.multi_reduction <maxnumf>, %scaled, %m [1] : vector<16x16xf32> to vector<16xf32>
      scf.yield %max : vector<16xf32>
    } {fa.softmax_phase = #fa<phase max>}
    %l = scf.for %j = %c0 to %tiles step %c1 iter_args(%l = %rows) -> (vector<16xf32>) {
      scf.yield %l : vector<16xf32>
    } {fa.softmax_phase = #fa<phase sum>}
    %o = scf.for %j = %c0 to %tiles step %c1 iter_args(%a = %acc) -> (vector<16x64xf32>) {
      scf.yield %a : vector<16x64xf32>
    } {fa.softmax_phase = #fa<phase accumulate>}
    gpu.return
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{fa-fuse-online-softmax: no probability-times-value matmul in the accumulate loop}}
  gpu.func @no_value_matmul(%tiles: index, %s: vector<16x16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = arith.constant dense<0.0> : vector<16xf32>
    %acc = arith.constant dense<0.0> : vector<16x64xf32>
    %scale = arith.constant dense<0.125> : vector<16x16xf32>
    %m = scf.for %j = %c0 to %tiles step %c1 iter_args(%m = %rows) -> (vector<16xf32>) {
      %scaled = arith.mulf %s, %scale : vector<16x16xf32>
      %max = vector.multi_reduction <maxnumf>, %scaled, %m [1] : vector<16x16xf32> to vector<16xf32>
      scf.yield %max : vector<16xf32>
    } {fa.softmax_phase = #fa<phase max>}
    %l = scf.for %j = %c0 to %tiles step %c1 iter_args(%l = %rows) -> (vector<16xf32>) {
      scf.yield %l : vector<16xf32>
    } {fa.softmax_phase = #fa<phase sum>}
    %o = scf.for %j = %c0 to %tiles step %c1 iter_args(%a = %acc) -> (vector<16x64xf32>) {
      scf.yield %a : vector<16x64xf32>
    } {fa.softmax_phase = #fa<phase accumulate>}
    gpu.return
  }
}

// -----

// The probabilities must be computed in the accumulate loop (the fused loop
// computes them from its own scores).
!smem = memref<16x64xf16, #gpu.address_space<workgroup>>
gpu.module @m {
  // expected-error @+1 {{fa-fuse-online-softmax: expects the matmul operand to be the probabilities exp(s - m) computed in the loop (then dropped out or truncated)}}
  gpu.func @probabilities_from_outside(%tiles: index, %s: vector<16x16xf32>, %p: vector<16x16xf16>)
      workgroup(%vb : !smem) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = arith.constant dense<0.0> : vector<16xf32>
    %acc = arith.constant dense<0.0> : vector<16x64xf32>
    %scale = arith.constant dense<0.125> : vector<16x16xf32>
    %m = scf.for %j = %c0 to %tiles step %c1 iter_args(%m = %rows) -> (vector<16xf32>) {
      %scaled = arith.mulf %s, %scale : vector<16x16xf32>
      %max = vector.multi_reduction <maxnumf>, %scaled, %m [1] : vector<16x16xf32> to vector<16xf32>
      scf.yield %max : vector<16xf32>
    } {fa.softmax_phase = #fa<phase max>}
    %l = scf.for %j = %c0 to %tiles step %c1 iter_args(%l = %rows) -> (vector<16xf32>) {
      scf.yield %l : vector<16xf32>
    } {fa.softmax_phase = #fa<phase sum>}
    %o = scf.for %j = %c0 to %tiles step %c1 iter_args(%a = %acc) -> (vector<16x64xf32>) {
      %a_new = fa.tile_matmul %p, %vb, %a : vector<16x16xf16>, !smem, vector<16x64xf32>
      scf.yield %a_new : vector<16x64xf32>
    } {fa.softmax_phase = #fa<phase accumulate>}
    gpu.return
  }
}
