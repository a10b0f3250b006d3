// RUN: fa-opt %s --split-input-file --verify-diagnostics --fa-expand-attention-variants --fa-tile-attention-grad --fa-fuse-online-softmax --fa-eliminate-causal-tiles --fa-overlap-softmax --fa-pipeline-kv-copies --fa-warp-specialize --cse | FileCheck %s

// warp_specialize = true in a backward's fa.tile splits its dK/dV kernel
// (alone: the delta and dQ kernels keep their structure). Q and dO come
// through TMA rings over the pipelined kernel's [2][32][128] buffers, lse
// and delta through row rings over its [2][32] buffers, one producer warp
// each (warps 0 and 2 by their first lane, 1 and 3 whole). Every walker
// runs the computing side's loops (the group's query heads, then the query
// tiles) and fills iteration h * n + j. The computing warpgroups copy K and
// V themselves, consume tile j where they read slot j % 2, and release it
// (one arrival per warp) at the next iteration's start and after the loop,
// when dK += dS^T Q and dV += P^T dO, waited for at the loop's yield, have
// read it.
// CHECK: grad_delta = #fa.kernel<op = attention_bwd_delta
// CHECK-NOT: warp_specialize
// CHECK-SAME: block = [256, 1, 1]
// CHECK: grad_dkdv = #fa.kernel<op = attention_bwd_dkdv
// CHECK-SAME: warp_specialize = true
// CHECK-SAME: block = [384, 1, 1]
// CHECK-SAME: #fa.param<"q_tma" : !nvgpu.tensormap.descriptor<tensor = memref<1x1x32x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>>
// CHECK-SAME: #fa.param<"dout_tma" : !nvgpu.tensormap.descriptor<tensor = memref<1x1x32x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>>
// CHECK-LABEL: gpu.func @grad_dkdv
// CHECK-SAME: (%[[Q:[^:]*]]: memref<?x?x?x128xbf16>, %[[K:[^:]*]]: memref<?x?x?x128xbf16>, %[[V:[^:]*]]: memref<?x?x?x128xbf16>, %[[DO:[^:]*]]: memref<?x?x?x128xbf16>, %[[LSE:[^:]*]]: memref<?x?x?xf32>, %[[DELTA:[^:]*]]: memref<?x?x?xf32>, %{{[^:]*}}: memref<?x?x?x128xbf16>, %{{[^:]*}}: memref<?x?x?x128xbf16>, %[[QMAP:[^:]*]]: !nvgpu.tensormap.descriptor<{{.*}}>, %[[DOMAP:[^:]*]]: !nvgpu.tensormap.descriptor<{{.*}}>)
// CHECK-SAME: workgroup(%[[KB:[^ ]+]] : memref<128x128xbf16, {{.*}}, %[[VB:[^ ]+]] : memref<128x128xbf16, {{.*}}, %[[QB:[^ ]+]] : memref<2x32x128xbf16, {{.*}}, %[[DOB:[^ ]+]] : memref<2x32x128xbf16, {{.*}}, %[[LB:[^ ]+]] : memref<2x32xf32, {{.*}}, %[[DB:[^ ]+]] : memref<2x32xf32,
// CHECK-SAME: fa.producer_threads = 128 : i64
// CHECK-SAME: known_block_size = array<i32: 384, 1, 1>
// The prologue's divisions (query heads per kv head, batch and kv head of
// the block) are 32-bit: a 64-bit one left ptxas's slow-path registers live
// into the producer.
// CHECK: arith.divui %{{.*}}, %{{.*}} : i32
// CHECK: arith.divui %{{.*}}, %{{.*}} : i32
// CHECK: arith.remui %{{.*}}, %{{.*}} : i32
// CHECK: %[[QRING:.*]] = fa.ring_create %[[QB]] consumers(8) : memref<2x32x128xbf16, #gpu.address_space<workgroup>> -> !fa.ring<2, memref<32x128xbf16, #gpu.address_space<workgroup>>>
// CHECK: %[[LRING:.*]] = fa.ring_create %[[LB]] consumers(8) : memref<2x32xf32, #gpu.address_space<workgroup>> -> !fa.ring<2, memref<32xf32, #gpu.address_space<workgroup>>>
// CHECK: %[[DORING:.*]] = fa.ring_create %[[DOB]] consumers(8)
// CHECK: %[[DRING:.*]] = fa.ring_create %[[DB]] consumers(8)
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[PRODUCER:.*]] = arith.cmpi uge, %[[TID]], %c256
// CHECK: scf.if %[[PRODUCER]] {
// CHECK-NEXT: nvvm.setmaxregister decrease 24
// CHECK: %[[WARP:.*]] = arith.divui %{{.*}}, %c32
// CHECK: scf.index_switch %[[WARP]]
// CHECK-NEXT: case 0 {
// CHECK-NEXT: %[[LANE:.*]] = gpu.lane_id
// CHECK: %[[FIRSTLANE:.*]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK-NEXT: scf.if %[[FIRSTLANE]] {
// The walkers' loops count in 32 bits (the producer's registers).
// CHECK: scf.for %[[H32:[^ ]*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK-NEXT: %[[H:.*]] = arith.index_castui %[[H32]] : i32 to index
// CHECK: %[[N:.*]] = arith.select
// CHECK: scf.for %[[J32:[^ ]*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK-NEXT: %[[J:.*]] = arith.index_castui %[[J32]] : i32 to index
// CHECK: %[[IT:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[ROW:.*]] = arith.muli %[[J]], %c32
// CHECK-NEXT: fa.ring_produce %[[QRING]][%[[IT]]] from %[[QMAP]][%{{.*}}, %{{.*}}, %[[ROW]], %c0]
// CHECK: case 1 {
// CHECK-NOT: gpu.lane_id
// CHECK: fa.ring_produce_rows %[[LRING]][%{{.*}}] from %[[LSE]][%{{.*}}, %{{.*}}, %{{.*}}]
// CHECK: fa.ring_produce %[[DORING]][%{{.*}}] from %[[DOMAP]]
// CHECK: fa.ring_produce_rows %[[DRING]][%{{.*}}] from %[[DELTA]]
// CHECK: default {
// CHECK: } else {
// CHECK-NEXT: nvvm.setmaxregister increase 240
// CHECK-NEXT: fa.copy_tile_async %[[K]]{{.*}} into %[[KB]]
// CHECK-NEXT: fa.copy_tile_async %[[V]]{{.*}} into %[[VB]]
// CHECK-NEXT: fa.wait_tiles
// CHECK-NOT: fa.copy_tile_async
// CHECK-NOT: fa.copy_rows_async
// CHECK-NOT: fa.wait_tiles
// The computing side's loops count in 32 bits too.
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> ({{.*}}) : i32 {
// CHECK: scf.for %[[CJ32:[^ ]*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> ({{.*}}) : i32 {
// CHECK-NEXT: %[[CJ:.*]] = arith.index_castui %[[CJ32]] : i32 to index
// CHECK: %[[CIT:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[NOTFIRST:.*]] = arith.cmpi ne, %[[CJ]], %c0
// CHECK-NEXT: scf.if %[[NOTFIRST]] {
// CHECK-NEXT: %[[PREV:.*]] = arith.subi %[[CIT]], %c1
// CHECK: fa.ring_release %[[QRING]][%[[PREV]]]
// CHECK: fa.ring_release %[[LRING]][%[[PREV]]]
// CHECK: fa.ring_release %[[DORING]][%[[PREV]]]
// CHECK: fa.ring_release %[[DRING]][%[[PREV]]]
// CHECK: %[[QSLOT:.*]] = fa.ring_consume %[[QRING]][%[[CIT]]]
// CHECK-NEXT: %[[DOSLOT:.*]] = fa.ring_consume %[[DORING]][%[[CIT]]]
// CHECK-NEXT: %[[LSLOT:.*]] = fa.ring_consume %[[LRING]][%[[CIT]]]
// CHECK-NEXT: %[[DSLOT:.*]] = fa.ring_consume %[[DRING]][%[[CIT]]]
// CHECK: fa.tile_matmul %[[KB]], %[[QSLOT]], %{{.*}} transpose_b
// CHECK-NEXT: fa.tile_matmul %[[VB]], %[[DOSLOT]], %{{.*}} transpose_b
// CHECK: fa.column_broadcast_shared %[[LSLOT]]
// CHECK: fa.tile_matmul %{{.*}}, %[[DOSLOT]], %{{.*}} : vector<128x32xbf16>
// CHECK: fa.column_broadcast_shared %[[DSLOT]]
// CHECK: fa.tile_matmul %{{.*}}, %[[QSLOT]], %{{.*}} : vector<128x32xbf16>
// CHECK: scf.yield
// The last tile's slots go back after the loop, when it visited any.
// CHECK: } {fa.copy_loop, fa.pipelined}
// CHECK: arith.muli
// CHECK-NEXT: %[[LAST:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[ANY:.*]] = arith.cmpi ne, %{{.*}}, %c0
// CHECK-NEXT: scf.if %[[ANY]] {
// CHECK: fa.ring_release %[[QRING]][%[[LAST]]]
// CHECK: fa.ring_release %[[DRING]][%[[LAST]]]
// CHECK: } {fa.warp_roles}
// CHECK-LABEL: gpu.func @grad(
// CHECK-NOT: fa.ring
// CHECK: gpu.return
func.func @grad(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>, %out: memref<?x?x?x128xbf16>, %dout: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x128xbf16>, %dk: memref<?x?x?x128xbf16>, %dv: memref<?x?x?x128xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true, warp_specialize = true>} {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>)
  return
}

// -----

// Causal: the producer's query loop starts at the key block's diagonal, as
// the computing side's does, and the iteration counts from there.
// CHECK-LABEL: gpu.func @causal_dkdv
// CHECK: nvvm.setmaxregister decrease 24
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK: %[[FIRST:.*]] = arith.divui %{{.*}}, %c32 : index
// CHECK-NEXT: %[[END:.*]] = arith.ceildivui
// CHECK: %[[FIRST32:.*]] = arith.index_castui %[[FIRST]] : index to i32
// CHECK-NEXT: %[[END32:.*]] = arith.index_castui %[[END]] : index to i32
// CHECK-NEXT: scf.for %[[J32:[^ ]*]] = %[[FIRST32]] to %[[END32]] step %{{.*}} : i32 {
// CHECK-NEXT: %[[J:.*]] = arith.index_castui %[[J32]] : i32 to index
// CHECK-NEXT: arith.subi %[[J]], %[[FIRST]]
// CHECK: fa.ring_produce
// CHECK: } else {
// CHECK: %[[CEND:.*]] = arith.ceildivui
// CHECK-NEXT: %[[CFIRST:.*]] = arith.divui %{{.*}}, %c32 : index
// CHECK: %[[CFIRST32:.*]] = arith.index_castui %[[CFIRST]] : index to i32
// CHECK-NEXT: %[[CEND32:.*]] = arith.index_castui %[[CEND]] : index to i32
// CHECK-NEXT: scf.for %[[CJ32:[^ ]*]] = %[[CFIRST32]] to %[[CEND32]] step %{{.*}} iter_args
// CHECK-NEXT: %[[CJ:.*]] = arith.index_castui %[[CJ32]] : i32 to index
// CHECK-NEXT: arith.subi %[[CJ]], %[[CFIRST]]
// CHECK: arith.cmpi ne, %[[CJ]], %[[CFIRST]]
// CHECK: fa.ring_consume
// CHECK: fa.apply_mask {{.*}} causal transposed
func.func @causal(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>, %out: memref<?x?x?x128xbf16>, %dout: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x128xbf16>, %dk: memref<?x?x?x128xbf16>, %dv: memref<?x?x?x128xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 32, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true, warp_specialize = true>} {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>) causal
  return
}

// -----

// expected-error @+1 {{fa-warp-specialize: warp_specialize = true on a dK/dV kernel needs num_warps = 8: two computing warpgroups}}
func.func @one_warpgroup(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>, %out: memref<?x?x?x64xbf16>, %dout: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x64xbf16>, %dk: memref<?x?x?x64xbf16>, %dv: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 64, block_n = 64, num_warps = 4, num_stages = 2, wgmma = true, warp_specialize = true>} {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
  return
}

// -----

// expected-error @+1 {{fa-warp-specialize: warp_specialize = true on a dK/dV kernel needs a backward without mask or score regions}}
func.func @softcap(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>, %out: memref<?x?x?x64xbf16>, %dout: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x64xbf16>, %dk: memref<?x?x?x64xbf16>, %dv: memref<?x?x?x64xbf16>, %cap: f32) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, num_stages = 2, wgmma = true, warp_specialize = true>} {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>) softcap(%cap)
  return
}

// -----

// expected-error @+1 {{fa-warp-specialize: warp_specialize = true on a dK/dV kernel needs wgmma = true}}
func.func @mma_sync(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>, %out: memref<?x?x?x64xbf16>, %dout: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x64xbf16>, %dk: memref<?x?x?x64xbf16>, %dv: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, num_stages = 2, warp_specialize = true>} {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
  return
}
