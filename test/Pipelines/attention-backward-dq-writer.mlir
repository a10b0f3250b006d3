// RUN: fa-opt %s --fa-expand-attention-variants --fa-tile-attention-grad=fuse-dq=1 --fa-fuse-online-softmax --fa-eliminate-causal-tiles --fa-overlap-softmax --fa-pipeline-kv-copies --fa-warp-specialize --cse | FileCheck %s
// REQUIRES: ptxas
// RUN: rm -rf %t && fa-opt %s --fa-to-ptx="fuse-dq=1 export-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/grad_dkdv.ptx
// RUN: for f in %t/*.ptx; do %ptxas -arch=sm_90a -v $f -o %t/out.cubin; done > %t/ptxas.txt 2>&1
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill stores|spill loads)|error" %t/ptxas.txt

// A fused dQ (fuse-dq) in the warp-specialised dK/dV kernel: the computing
// warpgroups stage each query tile's dQ^T, transposed, in an f32 buffer of
// 64 rows of 128 in four 128-byte-swizzled panels (1024-byte aligned, as
// TMA's swizzle is) and go on; two warps of the producer write it through
// dq_accum's tensor map (a new parameter, one panel a box), taking the
// tiles in turn (ring iteration i is writer i mod 2's). Q and dO share warp
// 0 (TMA, its first lane), lse and delta warp 1, and the producer keeps 40
// registers (the computing side 232).
// CHECK-LABEL: gpu.func @grad_dkdv
// CHECK-SAME: %[[SEM:[^:]*]]: memref<?x?x?xi32>
// CHECK-SAME: %[[MAP:[^:]*]]: !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x32xf32, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>)
// CHECK-SAME: %[[STAGED:[^ ]*]] : memref<64x128xf32, #gpu.address_space<workgroup>> {llvm.align = 1024 : i64})
// CHECK: nvvm.setmaxregister decrease 40
// CHECK: scf.index_switch
// CHECK: case 0 {
// CHECK: fa.ring_produce
// CHECK-NEXT: fa.ring_produce
// CHECK: case 1 {
// CHECK: fa.ring_produce_rows
// CHECK-NEXT: fa.ring_produce_rows
// Writer w, on its own tiles: it waits for the staged tile (barrier 4 + 2w,
// the 256 computing threads and its 32), for the block's turn, adds the
// panels by TMA (tensor reduce-adds), frees the buffer once read (barrier
// 5 + 2w), waits for the adds and passes the turn on.
// CHECK: case 2 {
// CHECK: scf.for {{.*}} : i32 {
// CHECK: scf.for {{.*}} : i32 {
// CHECK: %[[IT0:.*]] = arith.remui %{{.*}}, %c2 : index
// CHECK: %[[W0:.*]] = arith.index_castui %[[IT0]] : index to i32
// CHECK: %[[MINE0:.*]] = arith.cmpi eq, %[[W0]], %c0_i32
// CHECK: scf.if %[[MINE0]] {
// CHECK: nvvm.barrier id = %c4_i32 number_of_threads = %c288_i32
// CHECK-NEXT: fa.ordered_wait %[[SEM]][{{.*}}] equals %{{.*}} warp
// CHECK-NEXT: fa.accumulate_boxes_async %[[STAGED]], %[[MAP]][{{.*}}] overwrite(%{{.*}})
// CHECK: nvvm.barrier.arrive id = %c5_i32 number_of_threads = %c288_i32
// CHECK-NEXT: fa.wait_bulk_async
// CHECK-NEXT: fa.ordered_signal %[[SEM]][{{.*}}] warp
// The last writer frees the buffer for the first tile.
// CHECK: case 3 {
// CHECK: nvvm.barrier.arrive id = %c7_i32 number_of_threads = %c288_i32
// CHECK: scf.for {{.*}} : i32 {
// CHECK: scf.for {{.*}} : i32 {
// CHECK: arith.cmpi eq, %{{.*}}, %c1_i32
// CHECK: nvvm.barrier id = %c6_i32 number_of_threads = %c288_i32
// CHECK: fa.accumulate_boxes_async
// CHECK: nvvm.barrier.arrive id = %c7_i32 number_of_threads = %c288_i32
// CHECK: default {
// The computing side: dQ^T = K^T dS^T, then it waits until the previous
// tile's writer has freed the buffer (barrier 5 + 2 ((i + 1) mod 2)),
// stages, fences for the TMA's reads and tells this tile's writer
// (barrier 4 + 2 (i mod 2)): no turn, no add.
// CHECK: } else {
// CHECK-NEXT: nvvm.setmaxregister increase 232
// CHECK: %[[DQT:.*]] = fa.tile_matmul %{{.*}}, %{{.*}}, %{{.*}} transpose_a transpose_b : {{.*}}, vector<128x64xf32>
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c288_i32
// CHECK-NEXT: fa.stage_accumulator %[[DQT]], %[[STAGED]] transposed swizzled
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.barrier.arrive id = %{{.*}} number_of_threads = %c288_i32
// CHECK-NOT: fa.ordered_wait
// CHECK-NOT: fa.accumulate_tile
// CHECK: } {fa.warp_roles}

// The PTX has the hand-over's named barriers over 288 threads, the TMA
// tensor stores (first block) and reduce-adds of the panels, the writer's
// waits.
// PTX: .entry grad_dkdv(
// PTX-DAG: setmaxnreg.dec.sync.aligned.u32 40;
// PTX-DAG: setmaxnreg.inc.sync.aligned.u32 232;
// PTX-DAG: bar.sync 4, 288;
// PTX-DAG: bar.arrive 5, 288;
// PTX-DAG: bar.sync 6, 288;
// PTX-DAG: bar.arrive 7, 288;
// PTX-DAG: bar.sync %r{{[0-9]+}}, 288;
// PTX-DAG: bar.arrive %r{{[0-9]+}}, 288;
// PTX-DAG: cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}]
// PTX-DAG: cp.reduce.async.bulk.tensor.4d.global.shared::cta.add.tile.bulk_group [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}]
// PTX-DAG: cp.async.bulk.wait_group.read 0;
// PTX-DAG: cp.async.bulk.wait_group 0;
// PTX-DAG: fence.proxy.async.shared::cta;
// PTX-DAG: bar.warp.sync -1;
func.func @grad(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>, %out: memref<?x?x?x128xbf16>, %dout: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x128xbf16>, %dk: memref<?x?x?x128xbf16>, %dv: memref<?x?x?x128xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true, warp_specialize = true>} {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>)
  return
}

func.func @grad_causal(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>, %out: memref<?x?x?x128xbf16>, %dout: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x128xbf16>, %dk: memref<?x?x?x128xbf16>, %dv: memref<?x?x?x128xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 8, num_stages = 2, dq_block_m = 64, dq_block_n = 64, dq_num_warps = 4, wgmma = true, warp_specialize = true>} {
  fa.attention_grad ins(%q, %k, %v, %out, %dout, %lse : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?xf32>) outs(%dq, %dk, %dv : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>) causal
  return
}
