// RUN: fa-opt %s --fa-pipeline-kv-copies --canonicalize --split-input-file --verify-diagnostics | FileCheck %s

// Input: online-softmax key loops as fa-fuse-online-softmax leaves them,
// reduced to the copies and products the pass moves: K[j] staged into %kb
// and read by the scores, V[j] staged into %vb and read by P @ V.


// One buffer per tile: K[j] is copied one step ahead (before the loop for
// j = 0, during P @ V of j - 1 otherwise), V[j] during the scores of tile j.
// Each iteration waits twice, and once more after the loop.
// CHECK-LABEL: gpu.func @single_buffered
// CHECK-SAME: (%[[K:[^:]*]]: memref<?x?x?x64xf16>, %[[V:[^:]*]]: memref<?x?x?x64xf16>, {{.*}}, %[[TILES:[^:]*]]: index)
// CHECK-SAME: workgroup(%[[KB:[^ ]+]] : memref<16x64xf16, #gpu.address_space<workgroup>>, %[[VB:[^ ]+]] : memref<16x64xf16, #gpu.address_space<workgroup>>)
// CHECK-NOT: fa.stage_tile
// CHECK: fa.copy_tile_async %[[K]][%{{.*}}, %{{.*}}, %c0] into %[[KB]]
// CHECK-NEXT: scf.for %[[J:.*]] = %c0 to %[[TILES]] step %c1
// CHECK-NEXT: fa.wait_tiles
// CHECK-NEXT: %[[COL:.*]] = arith.muli %[[J]], %c16
// CHECK-NEXT: fa.copy_tile_async %[[V]][%{{.*}}, %{{.*}}, %[[COL]]] into %[[VB]]
// CHECK-NEXT: fa.tile_matmul %{{.*}}, %[[KB]], %{{.*}} transpose_b
// CHECK: fa.wait_tiles
// CHECK-NEXT: %[[NEXT:.*]] = arith.addi %[[J]], %c1
// CHECK-NEXT: %[[HAS_NEXT:.*]] = arith.cmpi ult, %[[NEXT]], %[[TILES]]
// CHECK-NEXT: scf.if %[[HAS_NEXT]] {
// CHECK-NEXT: %[[NEXT_COL:.*]] = arith.muli %[[NEXT]], %c16
// CHECK-NEXT: fa.copy_tile_async %[[K]][%{{.*}}, %{{.*}}, %[[NEXT_COL]]] into %[[KB]]
// CHECK-NEXT: }
// CHECK-NEXT: fa.tile_matmul %{{.*}}, %[[VB]], %{{.*}} :
// CHECK-NEXT: scf.yield
// CHECK-NEXT: } {fa.kv_loop, fa.pipelined, fa.softmax_phase = #fa<phase online>}
// CHECK-NEXT: fa.wait_tiles
// CHECK-NOT: fa.stage_tile
!kv = memref<?x?x?x64xf16>
!smem = memref<16x64xf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @single_buffered(%k: !kv, %v: !kv, %q: vector<16x64xf16>, %b: index, %h: index, %tiles: index)
      workgroup(%kb : !smem, %vb : !smem) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %zero_s = arith.constant dense<0.0> : vector<16x16xf32>
    %zero_acc = arith.constant dense<0.0> : vector<16x64xf32>
    %acc = scf.for %j = %c0 to %tiles step %c1 iter_args(%a = %zero_acc) -> (vector<16x64xf32>) {
      %col = arith.muli %j, %c16 : index
      fa.stage_tile %k[%b, %h, %col] into %kb : !kv, !smem
      %s = fa.tile_matmul %q, %kb, %zero_s transpose_b : vector<16x64xf16>, !smem, vector<16x16xf32>
      %p = arith.truncf %s : vector<16x16xf32> to vector<16x16xf16>
      fa.stage_tile %v[%b, %h, %col] into %vb : !kv, !smem
      %a_new = fa.tile_matmul %p, %vb, %a : vector<16x16xf16>, !smem, vector<16x64xf32>
      scf.yield %a_new : vector<16x64xf32>
    } {fa.kv_loop, fa.softmax_phase = #fa<phase online>}
    gpu.return
  }
}

// -----

// num_stages = 2: K and V get two slots each ([2][16][64]); no memref op in
// the input (the pass loads the memref dialect for its subviews itself).
// Both tiles of iteration 0 are copied into slot 0 before the loop; each
// iteration waits once, starts K[j+1] and V[j+1] into slot (j + 1) % 2 and
// reads slot j % 2.
// CHECK-LABEL: gpu.func @double_buffered
// CHECK-SAME: (%[[K:[^:]*]]: memref<?x?x?x64xf16>, %[[V:[^:]*]]: memref<?x?x?x64xf16>, {{.*}}, %[[TILES:[^:]*]]: index)
// CHECK-SAME: workgroup(%[[KB:[^ ]+]] : memref<2x16x64xf16, #gpu.address_space<workgroup>>, %[[VB:[^ ]+]] : memref<2x16x64xf16, #gpu.address_space<workgroup>>)
// CHECK-NOT: fa.stage_tile
// CHECK: memref.subview %[[KB]][0, 0, 0] [1, 16, 64]
// CHECK: fa.copy_tile_async %[[K]][%{{.*}}, %{{.*}}, %c0] into
// CHECK: memref.subview %[[VB]][0, 0, 0] [1, 16, 64]
// CHECK: fa.copy_tile_async %[[V]][%{{.*}}, %{{.*}}, %c0] into
// CHECK-NEXT: scf.for %[[J:.*]] = %c0 to %[[TILES]] step %c1
// CHECK-NEXT: fa.wait_tiles
// CHECK-NEXT: %[[NEXT:.*]] = arith.addi %[[J]], %c1
// CHECK-NEXT: %[[HAS_NEXT:.*]] = arith.cmpi ult, %[[NEXT]], %[[TILES]]
// CHECK-NEXT: scf.if %[[HAS_NEXT]] {
// CHECK-NEXT: %[[NEXT_SLOT:.*]] = arith.remui %[[NEXT]], %c2
// CHECK-NEXT: %[[K_NEXT:.*]] = memref.subview %[[KB]][%[[NEXT_SLOT]], 0, 0] [1, 16, 64]
// CHECK-NEXT: %[[NEXT_COL:.*]] = arith.muli %[[NEXT]], %c16
// CHECK-NEXT: fa.copy_tile_async %[[K]][%{{.*}}, %{{.*}}, %[[NEXT_COL]]] into %[[K_NEXT]]
// CHECK: %[[V_NEXT:.*]] = memref.subview %[[VB]]
// CHECK: fa.copy_tile_async %[[V]][%{{.*}}] into %[[V_NEXT]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[K_SLOT_INDEX:.*]] = arith.remui %[[J]], %c2
// CHECK-NEXT: %[[K_SLOT:.*]] = memref.subview %[[KB]][%[[K_SLOT_INDEX]], 0, 0] [1, 16, 64]
// CHECK-NEXT: %[[V_SLOT_INDEX:.*]] = arith.remui %[[J]], %c2
// CHECK-NEXT: %[[V_SLOT:.*]] = memref.subview %[[VB]][%[[V_SLOT_INDEX]], 0, 0] [1, 16, 64]
// CHECK-NEXT: fa.tile_matmul %{{.*}}, %[[K_SLOT]], %{{.*}} transpose_b
// CHECK-NOT: fa.wait_tiles
// CHECK: fa.tile_matmul %{{.*}}, %[[V_SLOT]], %{{.*}} :
// CHECK-NEXT: scf.yield
// CHECK-NEXT: } {fa.kv_loop, fa.pipelined, fa.softmax_phase = #fa<phase online>}
// CHECK-NEXT: fa.wait_tiles
!kv = memref<?x?x?x64xf16>
!smem = memref<16x64xf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @double_buffered(%k: !kv, %v: !kv, %q: vector<16x64xf16>, %b: index, %h: index, %tiles: index)
      workgroup(%kb : !smem, %vb : !smem) kernel attributes {fa.tile = #fa.tile<num_stages = 2>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %zero_s = arith.constant dense<0.0> : vector<16x16xf32>
    %zero_acc = arith.constant dense<0.0> : vector<16x64xf32>
    %acc = scf.for %j = %c0 to %tiles step %c1 iter_args(%a = %zero_acc) -> (vector<16x64xf32>) {
      %col = arith.muli %j, %c16 : index
      fa.stage_tile %k[%b, %h, %col] into %kb : !kv, !smem
      %s = fa.tile_matmul %q, %kb, %zero_s transpose_b : vector<16x64xf16>, !smem, vector<16x16xf32>
      %p = arith.truncf %s : vector<16x16xf32> to vector<16x16xf16>
      fa.stage_tile %v[%b, %h, %col] into %vb : !kv, !smem
      %a_new = fa.tile_matmul %p, %vb, %a : vector<16x16xf16>, !smem, vector<16x64xf32>
      scf.yield %a_new : vector<16x64xf32>
    } {fa.kv_loop, fa.softmax_phase = #fa<phase online>}
    gpu.return
  }
}

// -----

// A tile staged before the loop (the query tile in shared memory) is
// copied asynchronously too, before K[0]; the loop's first wait covers it.
// CHECK-LABEL: gpu.func @query_in_shared
// CHECK-SAME: (%[[Q:[^:]*]]: memref<?x?x?x64xf16>, %[[K:[^:]*]]: memref<?x?x?x64xf16>,
// CHECK-SAME: workgroup(%[[KB:[^ ]+]] : {{.*}}, %{{[^ ]+}} : {{.*}}, %[[QB:[^ ]+]] :
// CHECK-NOT: fa.stage_tile
// CHECK: fa.copy_tile_async %[[Q]][{{.*}}] into %[[QB]]
// CHECK-NEXT: fa.copy_tile_async %[[K]][{{.*}}] into %[[KB]]
// CHECK-NEXT: scf.for
// CHECK-NEXT: fa.wait_tiles
// CHECK: fa.tile_matmul %[[QB]], %[[KB]]
!kv = memref<?x?x?x64xf16>
!smem = memref<16x64xf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @query_in_shared(%q: !kv, %k: !kv, %v: !kv, %b: index, %h: index, %row0: index, %tiles: index)
      workgroup(%kb : !smem, %vb : !smem, %qb : !smem) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %zero_s = arith.constant dense<0.0> : vector<16x16xf32>
    %zero_acc = arith.constant dense<0.0> : vector<16x64xf32>
    fa.stage_tile %q[%b, %h, %row0] into %qb : !kv, !smem
    %acc = scf.for %j = %c0 to %tiles step %c1 iter_args(%a = %zero_acc) -> (vector<16x64xf32>) {
      %col = arith.muli %j, %c16 : index
      fa.stage_tile %k[%b, %h, %col] into %kb : !kv, !smem
      %s = fa.tile_matmul %qb, %kb, %zero_s transpose_b : !smem, !smem, vector<16x16xf32>
      %p = arith.truncf %s : vector<16x16xf32> to vector<16x16xf16>
      fa.stage_tile %v[%b, %h, %col] into %vb : !kv, !smem
      %a_new = fa.tile_matmul %p, %vb, %a : vector<16x16xf16>, !smem, vector<16x64xf32>
      scf.yield %a_new : vector<16x64xf32>
    } {fa.kv_loop, fa.softmax_phase = #fa<phase online>}
    gpu.return
  }
}

// -----

// The backward's loops (fa.copy_loop) read both tiles anywhere in the body
// (Q in the scores and in dK += dS^T Q), so with num_stages = 2 they take
// the double-buffered form: every product reads this iteration's slot.
// CHECK-LABEL: gpu.func @copy_loop
// CHECK-SAME: workgroup(%[[QB:[^ ]+]] : memref<2x16x64xf16, {{.*}}, %[[DOB:[^ ]+]] : memref<2x16x64xf16,
// CHECK-NOT: fa.stage_tile
// CHECK: scf.for %[[J:[^ ]+]] =
// CHECK-NEXT: fa.wait_tiles
// CHECK: scf.if
// CHECK: }
// CHECK-NEXT: %[[Q_SLOT_INDEX:.*]] = arith.remui %[[J]], %c2
// CHECK-NEXT: %[[Q_SLOT:.*]] = memref.subview %[[QB]][%[[Q_SLOT_INDEX]], 0, 0]
// CHECK-NEXT: %[[DO_SLOT_INDEX:.*]] = arith.remui %[[J]], %c2
// CHECK-NEXT: %[[DO_SLOT:.*]] = memref.subview %[[DOB]][%[[DO_SLOT_INDEX]], 0, 0]
// CHECK-NEXT: fa.tile_matmul %{{.*}}, %[[Q_SLOT]], %{{.*}} transpose_b
// CHECK: fa.tile_matmul %{{.*}}, %[[DO_SLOT]], %{{.*}} :
// CHECK-NEXT: fa.tile_matmul %{{.*}}, %[[Q_SLOT]], %{{.*}} :
// CHECK-NEXT: scf.yield
// CHECK-NEXT: } {fa.copy_loop, fa.pipelined}
// CHECK-NEXT: fa.wait_tiles
!kv = memref<?x?x?x64xf16>
!smem = memref<16x64xf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @copy_loop(%q: !kv, %do: !kv, %kt: vector<16x64xf16>, %b: index, %h: index, %tiles: index)
      workgroup(%qb : !smem, %dob : !smem) kernel attributes {fa.tile = #fa.tile<num_stages = 2>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %zero_s = arith.constant dense<0.0> : vector<16x16xf32>
    %zero = arith.constant dense<0.0> : vector<16x64xf32>
    %r:2 = scf.for %j = %c0 to %tiles step %c1 iter_args(%dk = %zero, %dv = %zero) -> (vector<16x64xf32>, vector<16x64xf32>) {
      %row = arith.muli %j, %c16 : index
      fa.stage_tile %q[%b, %h, %row] into %qb : !kv, !smem
      fa.stage_tile %do[%b, %h, %row] into %dob : !kv, !smem
      %st = fa.tile_matmul %kt, %qb, %zero_s transpose_b : vector<16x64xf16>, !smem, vector<16x16xf32>
      %pt = arith.truncf %st : vector<16x16xf32> to vector<16x16xf16>
      %dv_new = fa.tile_matmul %pt, %dob, %dv : vector<16x16xf16>, !smem, vector<16x64xf32>
      %dk_new = fa.tile_matmul %pt, %qb, %dk : vector<16x16xf16>, !smem, vector<16x64xf32>
      scf.yield %dk_new, %dv_new : vector<16x64xf32>, vector<16x64xf32>
    } {fa.copy_loop}
    gpu.return
  }
}

// -----

// The dK/dV loop's lse and delta of its queries (fa.stage_rows) travel with
// Q and dO: two slots each, the first iteration's copied before the loop,
// the next one's into the other slot after the wait, and the broadcasts read
// this iteration's slot.
// CHECK-LABEL: gpu.func @copy_loop_rows
// CHECK-SAME: workgroup(%[[QB:[^ ]+]] : memref<2x16x64xf16, {{.*}}, %[[DOB:[^ ]+]] : memref<2x16x64xf16, {{.*}}, %[[LB:[^ ]+]] : memref<2x16xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: fa.stage_rows
// CHECK: fa.copy_tile_async
// CHECK: fa.copy_tile_async
// CHECK: %[[FIRST:.*]] = memref.subview %[[LB]][0, 0] [1, 16] [1, 1] : memref<2x16xf32, #gpu.address_space<workgroup>> to memref<16xf32, strided<[1]>, #gpu.address_space<workgroup>>
// CHECK: %[[FIRST_CAST:.*]] = memref.cast %[[FIRST]]
// CHECK: fa.copy_rows_async %arg2[%arg4, %arg5, %c0] into %[[FIRST_CAST]]
// CHECK: scf.for %[[J:[^ ]+]] =
// CHECK-NEXT: fa.wait_tiles
// CHECK-NEXT: %[[NEXT:.*]] = arith.addi %[[J]], %c1
// CHECK: scf.if
// CHECK: fa.copy_tile_async
// CHECK: fa.copy_tile_async
// CHECK: %[[NEXT_INDEX:.*]] = arith.remui %[[NEXT]], %c2
// CHECK-NEXT: %[[NEXT_SLOT:.*]] = memref.subview %[[LB]][%[[NEXT_INDEX]], 0] [1, 16] [1, 1]
// CHECK-NEXT: %[[NEXT_ROW:.*]] = arith.muli %[[NEXT]], %c16
// CHECK-NEXT: fa.copy_rows_async %arg2[%arg4, %arg5, %[[NEXT_ROW]]] into %[[NEXT_SLOT]]
// CHECK-NEXT: }
// CHECK: memref.subview %[[DOB]]
// CHECK-NEXT: %[[L_INDEX:.*]] = arith.remui %[[J]], %c2
// CHECK-NEXT: %[[L_SLOT:.*]] = memref.subview %[[LB]][%[[L_INDEX]], 0] [1, 16] [1, 1]
// CHECK-NOT: fa.copy_rows_async
// CHECK: fa.column_broadcast_shared %[[L_SLOT]] : memref<16xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>> -> vector<16x16xf32>
// CHECK: } {fa.copy_loop, fa.pipelined}
// CHECK-NEXT: fa.wait_tiles
!kv = memref<?x?x?x64xf16>
!smem = memref<16x64xf16, #gpu.address_space<workgroup>>
!rows = memref<16xf32, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @copy_loop_rows(%q: !kv, %do: !kv, %lse: memref<?x?x?xf32>, %kt: vector<16x64xf16>, %b: index, %h: index, %tiles: index)
      workgroup(%qb : !smem, %dob : !smem, %lb : !rows) kernel attributes {fa.tile = #fa.tile<num_stages = 2>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %zero_s = arith.constant dense<0.0> : vector<16x16xf32>
    %zero = arith.constant dense<0.0> : vector<16x64xf32>
    %r = scf.for %j = %c0 to %tiles step %c1 iter_args(%dk = %zero) -> (vector<16x64xf32>) {
      %row = arith.muli %j, %c16 : index
      fa.stage_tile %q[%b, %h, %row] into %qb : !kv, !smem
      fa.stage_tile %do[%b, %h, %row] into %dob : !kv, !smem
      fa.stage_rows %lse[%b, %h, %row] into %lb : memref<?x?x?xf32>, !rows
      %st = fa.tile_matmul %kt, %qb, %zero_s transpose_b : vector<16x64xf16>, !smem, vector<16x16xf32>
      %cols = fa.column_broadcast_shared %lb : !rows -> vector<16x16xf32>
      %p = arith.subf %st, %cols : vector<16x16xf32>
      %pt = arith.truncf %p : vector<16x16xf32> to vector<16x16xf16>
      %dk_new = fa.tile_matmul %pt, %dob, %dk : vector<16x16xf16>, !smem, vector<16x64xf32>
      scf.yield %dk_new : vector<16x64xf32>
    } {fa.copy_loop}
    gpu.return
  }
}

// -----

// With one stage a copy loop's tile could be overwritten while the body
// still reads it: its copies stay synchronous.
// CHECK-LABEL: gpu.func @copy_loop_one_stage
// CHECK-NOT: fa.copy_tile_async
// CHECK-NOT: fa.wait_tiles
// CHECK: fa.stage_tile
// CHECK: fa.stage_tile
// CHECK: } {fa.copy_loop}
!kv = memref<?x?x?x64xf16>
!smem = memref<16x64xf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @copy_loop_one_stage(%q: !kv, %do: !kv, %kt: vector<16x64xf16>, %b: index, %h: index, %tiles: index)
      workgroup(%qb : !smem, %dob : !smem) kernel attributes {fa.tile = #fa.tile<num_stages = 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %zero_s = arith.constant dense<0.0> : vector<16x16xf32>
    %zero = arith.constant dense<0.0> : vector<16x64xf32>
    %r = scf.for %j = %c0 to %tiles step %c1 iter_args(%dk = %zero) -> (vector<16x64xf32>) {
      %row = arith.muli %j, %c16 : index
      fa.stage_tile %q[%b, %h, %row] into %qb : !kv, !smem
      fa.stage_tile %do[%b, %h, %row] into %dob : !kv, !smem
      %st = fa.tile_matmul %kt, %qb, %zero_s transpose_b : vector<16x64xf16>, !smem, vector<16x16xf32>
      %pt = arith.truncf %st : vector<16x16xf32> to vector<16x16xf16>
      %dk_new = fa.tile_matmul %pt, %dob, %dk : vector<16x16xf16>, !smem, vector<16x64xf32>
      scf.yield %dk_new : vector<16x64xf32>
    } {fa.copy_loop}
    gpu.return
  }
}

// -----

// pipeline_copies = 0 keeps a kernel's copies synchronous; a loop already
// pipelined (by fa-overlap-softmax) is left alone.
// CHECK-LABEL: gpu.func @pipelining_off
// CHECK-NOT: fa.copy_tile_async
// CHECK: } {fa.kv_loop, fa.softmax_phase = #fa<phase online>}
// CHECK-LABEL: gpu.func @already_pipelined
// CHECK-NOT: fa.wait_tiles
// CHECK: } {fa.pipelined, fa.softmax_phase = #fa<phase online>}
!kv = memref<?x?x?x64xf16>
!smem = memref<16x64xf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @pipelining_off(%k: !kv, %v: !kv, %b: index, %h: index, %tiles: index)
      workgroup(%kb : !smem, %vb : !smem) kernel attributes {fa.tile = #fa.tile<pipeline_copies = false>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %j = %c0 to %tiles step %c1 {
      fa.stage_tile %k[%b, %h, %j] into %kb : !kv, !smem
      fa.stage_tile %v[%b, %h, %j] into %vb : !kv, !smem
    } {fa.kv_loop, fa.softmax_phase = #fa<phase online>}
    gpu.return
  }
  gpu.func @already_pipelined(%k: !kv, %v: !kv, %b: index, %h: index, %tiles: index)
      workgroup(%kb : !smem, %vb : !smem) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %j = %c0 to %tiles step %c1 {
      fa.copy_tile_async %k[%b, %h, %j] into %kb : !kv, !smem
    } {fa.pipelined, fa.softmax_phase = #fa<phase online>}
    gpu.return
  }
}

// -----

!kv = memref<?x?x?x64xf16>
!smem = memref<16x64xf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @one_copy(%k: !kv, %b: index, %h: index, %tiles: index) workgroup(%kb : !smem) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{fa-pipeline-kv-copies: expects two tile copies (key and value) in the loop body}}
    scf.for %j = %c0 to %tiles step %c1 {
      fa.stage_tile %k[%b, %h, %j] into %kb : !kv, !smem
    } {fa.softmax_phase = #fa<phase online>}
    gpu.return
  }
}

// -----

// A copy whose slice changes with the iteration cannot be started in the
// iteration before.
!kv = memref<?x?x?x64xf16>
!smem = memref<16x64xf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @batch_varies(%k: !kv, %v: !kv, %h: index, %tiles: index) workgroup(%kb : !smem, %vb : !smem) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{fa-pipeline-kv-copies: expects copies whose source slice and buffer are loop-invariant}}
    scf.for %j = %c0 to %tiles step %c1 {
      fa.stage_tile %k[%j, %h, %c0] into %kb : !kv, !smem
      fa.stage_tile %v[%j, %h, %c0] into %vb : !kv, !smem
    } {fa.softmax_phase = #fa<phase online>}
    gpu.return
  }
}

// -----

!kv = memref<?x?x?x64xf16>
!smem = memref<16x64xf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @one_buffer(%k: !kv, %v: !kv, %b: index, %h: index, %tiles: index) workgroup(%kb : !smem) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{fa-pipeline-kv-copies: expects the key and value copies to use different buffers}}
    scf.for %j = %c0 to %tiles step %c1 {
      fa.stage_tile %k[%b, %h, %j] into %kb : !kv, !smem
      fa.stage_tile %v[%b, %h, %j] into %kb : !kv, !smem
    } {fa.softmax_phase = #fa<phase online>}
    gpu.return
  }
}
