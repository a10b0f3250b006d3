// RUN: fa-opt %s | fa-opt | FileCheck %s
// The ordered accumulation ops print and parse back: a block waits for its
// turn on a query tile's counter, adds its partial dQ^T (head_dim 128 down,
// 64 queries across) or a row-major partial into the f32 workspace, the
// first contributor storing instead, then passes the turn on.

// CHECK-LABEL: func @ordered_accumulation
// CHECK-SAME: (%[[DQT:.*]]: vector<128x64xf32>, %[[DQ:.*]]: vector<64x128xf32>, %[[ACC:.*]]: memref<?x?x?x128xf32>, %[[CNT:.*]]: memref<?x?x?xi32>, %[[B:.*]]: index, %[[H:.*]]: index, %[[T:.*]]: index, %[[ROW:.*]]: index, %[[K:.*]]: i32, %[[KI:.*]]: index, %[[FIRST:.*]]: i1)
func.func @ordered_accumulation(%dqt: vector<128x64xf32>, %dq: vector<64x128xf32>,
                                %acc: memref<?x?x?x128xf32>, %counters: memref<?x?x?xi32>,
                                %b: index, %h: index, %t: index, %row: index,
                                %k: i32, %ki: index, %first: i1) {
  // CHECK: fa.ordered_wait %[[CNT]][%[[B]], %[[H]], %[[T]]] equals %[[K]] : memref<?x?x?xi32>, i32
  fa.ordered_wait %counters[%b, %h, %t] equals %k : memref<?x?x?xi32>, i32
  // CHECK: fa.ordered_wait %[[CNT]][%[[B]], %[[H]], %[[T]]] equals %[[KI]] : memref<?x?x?xi32>, index
  fa.ordered_wait %counters[%b, %h, %t] equals %ki : memref<?x?x?xi32>, index
  // CHECK: fa.accumulate_tile %[[DQT]], %[[ACC]][%[[B]], %[[H]], %[[ROW]]] transposed overwrite(%[[FIRST]]) : vector<128x64xf32>, memref<?x?x?x128xf32>
  fa.accumulate_tile %dqt, %acc[%b, %h, %row] transposed overwrite(%first) : vector<128x64xf32>, memref<?x?x?x128xf32>
  // CHECK: fa.accumulate_tile %[[DQ]], %[[ACC]][%[[B]], %[[H]], %[[ROW]]] : vector<64x128xf32>, memref<?x?x?x128xf32>
  fa.accumulate_tile %dq, %acc[%b, %h, %row] : vector<64x128xf32>, memref<?x?x?x128xf32>
  // CHECK: fa.accumulate_tile %[[DQ]], %[[ACC]][%[[B]], %[[H]], %[[ROW]]] overwrite(%[[FIRST]]) : vector<64x128xf32>, memref<?x?x?x128xf32>
  fa.accumulate_tile %dq, %acc[%b, %h, %row] overwrite(%first) : vector<64x128xf32>, memref<?x?x?x128xf32>
  // CHECK: fa.ordered_signal %[[CNT]][%[[B]], %[[H]], %[[T]]] : memref<?x?x?xi32>
  fa.ordered_signal %counters[%b, %h, %t] : memref<?x?x?xi32>
  return
}

// A workspace of dynamic head_dim takes a tile of any head_dim.
// CHECK-LABEL: func @dynamic_head_dim
// CHECK: fa.accumulate_tile %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] transposed : vector<64x32xf32>, memref<?x?x?x?xf32>
func.func @dynamic_head_dim(%dqt: vector<64x32xf32>, %acc: memref<?x?x?x?xf32>, %i: index) {
  fa.accumulate_tile %dqt, %acc[%i, %i, %i] transposed : vector<64x32xf32>, memref<?x?x?x?xf32>
  return
}

// A dQ writer warp's hand-over: the computing warpgroups stage dQ^T
// transposed in 128-byte-swizzled panels; the writer warp takes its turn
// (warp), adds the tile by TMA tensor reductions of one panel a box (the
// first contributor stores), waits for the adds, and passes the turn on
// (warp).
// CHECK-LABEL: func @writer_warp
// CHECK-SAME: (%[[DQT:.*]]: vector<128x64xf32>, %[[BUF:.*]]: memref<64x128xf32, #gpu.address_space<workgroup>>, %[[MAP:.*]]: !nvgpu.tensormap.descriptor<{{.*}}>, %[[CNT:.*]]: memref<?x?x?xi32>, %[[I:.*]]: index, %[[FIRST:.*]]: i1)
!dq_boxes = !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x32xf32, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
func.func @writer_warp(%dqt: vector<128x64xf32>,
                       %staged: memref<64x128xf32, #gpu.address_space<workgroup>>,
                       %map: !dq_boxes, %counters: memref<?x?x?xi32>,
                       %i: index, %first: i1) {
  // CHECK: fa.stage_accumulator %[[DQT]], %[[BUF]] transposed swizzled : vector<128x64xf32>, memref<64x128xf32, #gpu.address_space<workgroup>>
  fa.stage_accumulator %dqt, %staged transposed swizzled : vector<128x64xf32>, memref<64x128xf32, #gpu.address_space<workgroup>>
  // CHECK: fa.ordered_wait %[[CNT]][%[[I]], %[[I]], %[[I]]] equals %[[I]] warp : memref<?x?x?xi32>, index
  fa.ordered_wait %counters[%i, %i, %i] equals %i warp : memref<?x?x?xi32>, index
  // CHECK: fa.accumulate_boxes_async %[[BUF]], %[[MAP]][%[[I]], %[[I]], %[[I]]] overwrite(%[[FIRST]]) : memref<64x128xf32, #gpu.address_space<workgroup>>, !nvgpu.tensormap.descriptor
  fa.accumulate_boxes_async %staged, %map[%i, %i, %i] overwrite(%first) : memref<64x128xf32, #gpu.address_space<workgroup>>, !dq_boxes
  // CHECK: fa.wait_bulk_async
  fa.wait_bulk_async
  // CHECK: fa.ordered_signal %[[CNT]][%[[I]], %[[I]], %[[I]]] warp : memref<?x?x?xi32>
  fa.ordered_signal %counters[%i, %i, %i] warp : memref<?x?x?xi32>
  // Without overwrite: always adds.
  // CHECK: fa.accumulate_boxes_async %[[BUF]], %[[MAP]][%[[I]], %[[I]], %[[I]]] : memref
  fa.accumulate_boxes_async %staged, %map[%i, %i, %i] : memref<64x128xf32, #gpu.address_space<workgroup>>, !dq_boxes
  return
}

// Staging without the swizzle, into a padded buffer.
// CHECK-LABEL: func @stage_padded
// CHECK: fa.stage_accumulator %{{.*}}, %{{.*}} transposed : vector<128x64xf32>, memref<64x132xf32, #gpu.address_space<workgroup>>
func.func @stage_padded(%dqt: vector<128x64xf32>, %staged: memref<64x132xf32, #gpu.address_space<workgroup>>) {
  fa.stage_accumulator %dqt, %staged transposed : vector<128x64xf32>, memref<64x132xf32, #gpu.address_space<workgroup>>
  return
}

// A writer warp's turns may be in the producer branch.
// CHECK-LABEL: func @warp_turns_in_producer_branch
// CHECK: fa.ordered_wait %{{.*}} equals %{{.*}} warp
// CHECK: fa.ordered_signal %{{.*}} warp
func.func @warp_turns_in_producer_branch(%c: memref<?x?x?xi32>, %i: index, %producer: i1) {
  scf.if %producer {
    fa.ordered_wait %c[%i, %i, %i] equals %i warp : memref<?x?x?xi32>, index
    fa.ordered_signal %c[%i, %i, %i] warp : memref<?x?x?xi32>
  } {fa.warp_roles}
  return
}
