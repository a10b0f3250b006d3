// RUN: fa-opt %s --fa-pipeline-kv-copies | FileCheck %s

// The pass run alone on a kernel without any memref op: double buffering
// reads the slots through memref.subview, so the pass loads the memref
// dialect itself (it crashed when the input had not).
// CHECK-LABEL: gpu.func @no_memref_ops
// CHECK-SAME: workgroup(%[[KB:.*]] : memref<2x64x64xbf16, #gpu.address_space<workgroup>>, %[[VB:.*]] : memref<2x64x64xbf16, #gpu.address_space<workgroup>>)
// CHECK: fa.copy_tile_async %{{.*}} into %{{.*}}
// CHECK: scf.for
// CHECK: fa.wait_tiles
// CHECK: memref.subview %[[KB]]
// CHECK: } {fa.pipelined, fa.softmax_phase = #fa<phase online>}
// CHECK-NEXT: fa.wait_tiles
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @no_memref_ops(%k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>, %q: vector<64x64xbf16>)
        workgroup(%kb : memref<64x64xbf16, #gpu.address_space<workgroup>>, %vb : memref<64x64xbf16, #gpu.address_space<workgroup>>)
        kernel attributes {fa.tile = #fa.tile<num_stages = 2>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %zero = arith.constant dense<0.0> : vector<64x64xf32>
      %r = scf.for %j = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (vector<64x64xf32>) {
        fa.stage_tile %k[%c0, %c0, %j] into %kb : memref<?x?x?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %s = fa.tile_matmul %q, %kb, %acc transpose_b : vector<64x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>, vector<64x64xf32>
        %p = arith.truncf %s : vector<64x64xf32> to vector<64x64xbf16>
        fa.stage_tile %v[%c0, %c0, %j] into %vb : memref<?x?x?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %o = fa.tile_matmul %p, %vb, %acc : vector<64x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>, vector<64x64xf32>
        scf.yield %o : vector<64x64xf32>
      } {fa.softmax_phase = #fa<phase online>}
      gpu.return
    }
  }
}
