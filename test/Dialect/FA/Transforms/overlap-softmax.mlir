// RUN: fa-opt %s --fa-overlap-softmax --canonicalize --split-input-file --verify-diagnostics | FileCheck %s

// Input: an online-softmax key loop as fa-fuse-online-softmax and
// fa-eliminate-causal-tiles leave it, reduced to what the pass moves: the
// copies of K[j] and V[j], the scores S = Q K[j]^T, the softmax carrying the
// row maximum, the rescale of the accumulator and acc' = P V[j] + acc.


// The prologue, when there are tiles: K[0]; wait; K[1] if there is one;
// V[0]; the scores of tile 0 and their softmax, yielding m, the rescaled
// accumulator and P, without P @ V.
// CHECK-LABEL: gpu.func @online
// CHECK-SAME: (%[[K:[^:]*]]: memref<?x?x?x64xbf16>, %[[V:[^:]*]]: memref<?x?x?x64xbf16>, {{.*}}, %[[TILES:[^:]*]]: index, %[[OUT:[^:]*]]: memref<16x64xf32>)
// CHECK-SAME: workgroup(%[[QB:[^ ]+]] : memref<16x64xbf16, {{.*}}, %[[KB:[^ ]+]] : memref<2x16x64xbf16, {{.*}}, %[[VB:[^ ]+]] : memref<2x16x64xbf16,
// CHECK-NOT: fa.stage_tile
// CHECK: %[[HAS_TILES:.*]] = arith.cmpi ugt, %[[TILES]], %c0
// CHECK: %[[FIRST:.*]]:3 = scf.if %[[HAS_TILES]] -> (vector<16xf32>, vector<16x64xf32>, vector<16x16xbf16>) {
// CHECK: fa.copy_tile_async %[[K]][%{{.*}}, %{{.*}}, %c0]
// CHECK-NEXT: fa.wait_tiles
// CHECK: fa.copy_tile_async %[[K]][%{{.*}}, %{{.*}}, %c16]
// CHECK: fa.copy_tile_async %[[V]][%{{.*}}, %{{.*}}, %c0]
// CHECK: fa.tile_matmul %[[QB]], %{{.*}} transpose_b
// CHECK-NOT: fa.tile_matmul
// CHECK: %[[P0:.*]] = arith.truncf
// CHECK-NEXT: scf.yield %{{.*}}, %{{.*}}, %[[P0]]
// CHECK: } else {
// The loop starts at tile 1 and carries P: wait; K[j+1] if any; V[j]; the
// scores of K[j] (slot j % 2), then P @ V[j-1] (slot (j - 1) % 2) on the
// carried P and accumulator, whose result only the rescale reads.
// CHECK: %[[LOOP:.*]]:3 = scf.for %[[J:[^ ]+]] = %c1 to %[[TILES]] step %c1 iter_args(%[[M:[^ ]+]] = %[[FIRST]]#0, %[[ACC:[^ ]+]] = %[[FIRST]]#1, %[[P:[^ ]+]] = %[[FIRST]]#2)
// CHECK-NEXT: fa.wait_tiles
// CHECK: scf.if
// CHECK: fa.copy_tile_async %[[K]]
// CHECK: }
// CHECK: %[[V_SLOT:.*]] = memref.subview %[[VB]]
// CHECK: fa.copy_tile_async %[[V]][{{.*}}] into %[[V_SLOT]]
// CHECK: %[[K_SLOT:.*]] = memref.subview %[[KB]]
// CHECK-NEXT: %[[S:.*]] = fa.tile_matmul %[[QB]], %[[K_SLOT]], %{{.*}} transpose_b
// CHECK-NEXT: %[[PREV:.*]] = arith.subi %[[J]], %c1
// CHECK-NEXT: %[[PREV_SLOT:.*]] = arith.remui %[[PREV]], %c2
// CHECK-NEXT: %[[PREV_V:.*]] = memref.subview %[[VB]][%[[PREV_SLOT]], 0, 0]
// CHECK-NEXT: %[[PV:.*]] = fa.tile_matmul %[[P]], %[[PREV_V]], %[[ACC]] :
// CHECK-NEXT: vector.multi_reduction <maxnumf>, %[[S]], %[[M]]
// CHECK: %[[ACC_SCALED:.*]] = arith.mulf %[[PV]], %{{.*}}
// CHECK-NEXT: %[[P_NEXT:.*]] = arith.truncf
// CHECK-NEXT: scf.yield %{{.*}}, %[[ACC_SCALED]], %[[P_NEXT]]
// CHECK-NEXT: } {fa.kv_tiles = "full", fa.pipelined, fa.softmax_phase = #fa<phase online>}
// The epilogue: wait, then P @ V of the last tile.
// CHECK-NEXT: %[[RESULT:.*]] = scf.if %[[HAS_TILES]] -> (vector<16x64xf32>) {
// CHECK-NEXT: fa.wait_tiles
// CHECK-NEXT: %[[LAST:.*]] = arith.subi %[[TILES]], %c1
// CHECK-NEXT: %[[LAST_SLOT:.*]] = arith.remui %[[LAST]], %c2
// CHECK-NEXT: %[[LAST_V:.*]] = memref.subview %[[VB]][%[[LAST_SLOT]], 0, 0]
// CHECK-NEXT: %[[FINAL:.*]] = fa.tile_matmul %[[LOOP]]#2, %[[LAST_V]], %[[LOOP]]#1 :
// CHECK-NEXT: scf.yield %[[FINAL]]
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[LOOP]]#1
// CHECK-NEXT: }
// CHECK-NEXT: vector.transfer_write %[[RESULT]], %[[OUT]]
!kv = memref<?x?x?x64xbf16>
!smem = memref<16x64xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @online(%k: !kv, %v: !kv, %b: index, %h: index, %tiles: index, %out: memref<16x64xf32>)
      workgroup(%qb : !smem, %kb : !smem, %vb : !smem)
      kernel attributes {fa.tile = #fa.tile<num_stages = 2, wgmma = true, overlap_softmax = true>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %neg_inf = arith.constant dense<0xFF800000> : vector<16xf32>
    %zero_s = arith.constant dense<0.0> : vector<16x16xf32>
    %zero_acc = arith.constant dense<0.0> : vector<16x64xf32>
    %r:2 = scf.for %j = %c0 to %tiles step %c1 iter_args(%m = %neg_inf, %acc = %zero_acc) -> (vector<16xf32>, vector<16x64xf32>) {
      %col = arith.muli %j, %c16 : index
      fa.stage_tile %k[%b, %h, %col] into %kb : !kv, !smem
      %s = fa.tile_matmul %qb, %kb, %zero_s transpose_b : !smem, !smem, vector<16x16xf32>
      %m_new = vector.multi_reduction <maxnumf>, %s, %m [1] : vector<16x16xf32> to vector<16xf32>
      %d = arith.subf %m, %m_new : vector<16xf32>
      %alpha = math.exp2 %d : vector<16xf32>
      %mb = fa.row_broadcast %m_new : vector<16xf32> -> vector<16x16xf32>
      %e = arith.subf %s, %mb : vector<16x16xf32>
      %p = math.exp2 %e : vector<16x16xf32>
      %alpha_b = fa.row_broadcast %alpha : vector<16xf32> -> vector<16x64xf32>
      %acc_scaled = arith.mulf %acc, %alpha_b : vector<16x64xf32>
      %p_bf16 = arith.truncf %p : vector<16x16xf32> to vector<16x16xbf16>
      fa.stage_tile %v[%b, %h, %col] into %vb : !kv, !smem
      %acc_new = fa.tile_matmul %p_bf16, %vb, %acc_scaled : vector<16x16xbf16>, !smem, vector<16x64xf32>
      scf.yield %m_new, %acc_new : vector<16xf32>, vector<16x64xf32>
    } {fa.kv_tiles = "full", fa.softmax_phase = #fa<phase online>}
    vector.transfer_write %r#1, %out[%c0, %c0] : vector<16x64xf32>, memref<16x64xf32>
    gpu.return
  }
}

// -----

// Without overlap_softmax the loop is left to fa-pipeline-kv-copies.
// CHECK-LABEL: gpu.func @not_overlapped
// CHECK-NOT: fa.copy_tile_async
// CHECK: fa.stage_tile
// CHECK: fa.stage_tile
// CHECK: } {fa.softmax_phase = #fa<phase online>}
!kv = memref<?x?x?x64xbf16>
!smem = memref<16x64xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @not_overlapped(%k: !kv, %v: !kv, %b: index, %h: index, %tiles: index)
      workgroup(%qb : !smem, %kb : !smem, %vb : !smem)
      kernel attributes {fa.tile = #fa.tile<num_stages = 2, wgmma = true>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero_s = arith.constant dense<0.0> : vector<16x16xf32>
    %zero_acc = arith.constant dense<0.0> : vector<16x64xf32>
    %r = scf.for %j = %c0 to %tiles step %c1 iter_args(%acc = %zero_acc) -> (vector<16x64xf32>) {
      fa.stage_tile %k[%b, %h, %j] into %kb : !kv, !smem
      %s = fa.tile_matmul %qb, %kb, %zero_s transpose_b : !smem, !smem, vector<16x16xf32>
      %p = arith.truncf %s : vector<16x16xf32> to vector<16x16xbf16>
      fa.stage_tile %v[%b, %h, %j] into %vb : !kv, !smem
      %acc_new = fa.tile_matmul %p, %vb, %acc : vector<16x16xbf16>, !smem, vector<16x64xf32>
      scf.yield %acc_new : vector<16x64xf32>
    } {fa.softmax_phase = #fa<phase online>}
    gpu.return
  }
}

// -----

// The configuration is checked on kernels not made by fa-tile-attention too.
gpu.module @m {
  // expected-error @+1 {{fa-overlap-softmax: overlap_softmax needs wgmma = true (products that run while the warps work) and num_stages = 2 (two slots per tile)}}
  gpu.func @no_wgmma() kernel attributes {fa.tile = #fa.tile<num_stages = 2, overlap_softmax = true>} {
    gpu.return
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{fa-overlap-softmax: overlap_softmax needs wgmma = true (products that run while the warps work) and num_stages = 2 (two slots per tile)}}
  gpu.func @one_stage() kernel attributes {fa.tile = #fa.tile<wgmma = true, overlap_softmax = true>} {
    gpu.return
  }
}

// -----

!kv = memref<?x?x?x64xbf16>
!smem = memref<16x64xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @one_copy(%k: !kv, %b: index, %h: index, %tiles: index) workgroup(%kb : !smem)
      kernel attributes {fa.tile = #fa.tile<num_stages = 2, wgmma = true, overlap_softmax = true>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{fa-overlap-softmax: expects two tile copies (key and value) in the loop body}}
    scf.for %j = %c0 to %tiles step %c1 {
      fa.stage_tile %k[%b, %h, %j] into %kb : !kv, !smem
    } {fa.softmax_phase = #fa<phase online>}
    gpu.return
  }
}

// -----

!kv = memref<?x?x?x64xbf16>
!smem = memref<16x64xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @one_product(%k: !kv, %b: index, %h: index, %tiles: index)
      workgroup(%qb : !smem, %kb : !smem, %vb : !smem)
      kernel attributes {fa.tile = #fa.tile<num_stages = 2, wgmma = true, overlap_softmax = true>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero_s = arith.constant dense<0.0> : vector<16x16xf32>
    // expected-error @+1 {{fa-overlap-softmax: expects two products in the loop body: the scores with the key tile, then P @ V with the value tile}}
    %r = scf.for %j = %c0 to %tiles step %c1 iter_args(%acc = %zero_s) -> (vector<16x16xf32>) {
      fa.stage_tile %k[%b, %h, %j] into %kb : !kv, !smem
      fa.stage_tile %k[%b, %h, %j] into %vb : !kv, !smem
      %s = fa.tile_matmul %qb, %kb, %acc transpose_b : !smem, !smem, vector<16x16xf32>
      scf.yield %s : vector<16x16xf32>
    } {fa.softmax_phase = #fa<phase online>}
    gpu.return
  }
}

// -----

// P must be a register tile: a shared one could not be carried to the next
// iteration.
!kv = memref<?x?x?x64xbf16>
!smem = memref<16x64xbf16, #gpu.address_space<workgroup>>
!p = memref<16x16xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @shared_p(%k: !kv, %v: !kv, %b: index, %h: index, %tiles: index)
      workgroup(%qb : !smem, %kb : !smem, %vb : !smem, %pb : !p)
      kernel attributes {fa.tile = #fa.tile<num_stages = 2, wgmma = true, overlap_softmax = true>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero_s = arith.constant dense<0.0> : vector<16x16xf32>
    %zero_acc = arith.constant dense<0.0> : vector<16x64xf32>
    // expected-error @+1 {{fa-overlap-softmax: expects P in registers (a vector), to carry it to the next iteration}}
    %r = scf.for %j = %c0 to %tiles step %c1 iter_args(%acc = %zero_acc) -> (vector<16x64xf32>) {
      fa.stage_tile %k[%b, %h, %j] into %kb : !kv, !smem
      %s = fa.tile_matmul %qb, %kb, %zero_s transpose_b : !smem, !smem, vector<16x16xf32>
      fa.stage_tile %v[%b, %h, %j] into %vb : !kv, !smem
      %acc_new = fa.tile_matmul %pb, %vb, %acc : !p, !smem, vector<16x64xf32>
      scf.yield %acc_new : vector<16x64xf32>
    } {fa.softmax_phase = #fa<phase online>}
    gpu.return
  }
}

// -----

// P @ V moves to the next iteration: nothing in this one may read it.
!kv = memref<?x?x?x64xbf16>
!smem = memref<16x64xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @result_read_in_body(%k: !kv, %v: !kv, %b: index, %h: index, %tiles: index, %out: memref<16x64xf32>)
      workgroup(%qb : !smem, %kb : !smem, %vb : !smem)
      kernel attributes {fa.tile = #fa.tile<num_stages = 2, wgmma = true, overlap_softmax = true>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero_s = arith.constant dense<0.0> : vector<16x16xf32>
    %zero_acc = arith.constant dense<0.0> : vector<16x64xf32>
    // expected-error @+1 {{fa-overlap-softmax: expects P @ V's result to be used only as the carried accumulator}}
    %r = scf.for %j = %c0 to %tiles step %c1 iter_args(%acc = %zero_acc) -> (vector<16x64xf32>) {
      fa.stage_tile %k[%b, %h, %j] into %kb : !kv, !smem
      %s = fa.tile_matmul %qb, %kb, %zero_s transpose_b : !smem, !smem, vector<16x16xf32>
      %p = arith.truncf %s : vector<16x16xf32> to vector<16x16xbf16>
      fa.stage_tile %v[%b, %h, %j] into %vb : !kv, !smem
      %acc_new = fa.tile_matmul %p, %vb, %acc : vector<16x16xbf16>, !smem, vector<16x64xf32>
      vector.transfer_write %acc_new, %out[%c0, %c0] : vector<16x64xf32>, memref<16x64xf32>
      scf.yield %acc_new : vector<16x64xf32>
    } {fa.softmax_phase = #fa<phase online>}
    gpu.return
  }
}

// -----

// The deferred P @ V is issued right after the scores: the accumulator may
// not be read before them.
!kv = memref<?x?x?x64xbf16>
!smem = memref<16x64xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @accumulator_read_early(%k: !kv, %v: !kv, %b: index, %h: index, %tiles: index, %out: memref<16x64xf32>)
      workgroup(%qb : !smem, %kb : !smem, %vb : !smem)
      kernel attributes {fa.tile = #fa.tile<num_stages = 2, wgmma = true, overlap_softmax = true>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero_s = arith.constant dense<0.0> : vector<16x16xf32>
    %zero_acc = arith.constant dense<0.0> : vector<16x64xf32>
    // expected-error @+1 {{fa-overlap-softmax: expects the accumulator to be read only after the scores}}
    %r = scf.for %j = %c0 to %tiles step %c1 iter_args(%acc = %zero_acc) -> (vector<16x64xf32>) {
      vector.transfer_write %acc, %out[%c0, %c0] : vector<16x64xf32>, memref<16x64xf32>
      fa.stage_tile %k[%b, %h, %j] into %kb : !kv, !smem
      %s = fa.tile_matmul %qb, %kb, %zero_s transpose_b : !smem, !smem, vector<16x16xf32>
      %p = arith.truncf %s : vector<16x16xf32> to vector<16x16xbf16>
      fa.stage_tile %v[%b, %h, %j] into %vb : !kv, !smem
      %acc_new = fa.tile_matmul %p, %vb, %acc : vector<16x16xbf16>, !smem, vector<16x64xf32>
      scf.yield %acc_new : vector<16x64xf32>
    } {fa.softmax_phase = #fa<phase online>}
    gpu.return
  }
}
