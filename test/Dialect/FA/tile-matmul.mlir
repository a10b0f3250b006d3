// RUN: fa-opt %s | fa-opt | FileCheck %s
// RUN: fa-opt %s --mlir-print-op-generic | fa-opt | FileCheck %s
// fa.tile_matmul prints and parses back with each operand orientation:
// transpose_a (a shared a holding K x M), transpose_b (b holding N x K),
// both, and neither.

!keys = memref<128x64xbf16, #gpu.address_space<workgroup>>
!ds = memref<128x32xbf16, #gpu.address_space<workgroup>>
!dst = memref<32x128xbf16, #gpu.address_space<workgroup>>

// dQ^T = K^T dS^T: the key tile as staged ([keys][head_dim] = K x M) and
// dS^T as [keys][queries] (K x N), or as [queries][keys] with transpose_b.
// CHECK-LABEL: func @orientations
// CHECK-SAME: (%[[K:.*]]: memref<128x64xbf16, #gpu.address_space<workgroup>>, %[[DS:.*]]: memref<128x32xbf16, #gpu.address_space<workgroup>>, %[[DST:.*]]: memref<32x128xbf16, #gpu.address_space<workgroup>>, %[[ACC:.*]]: vector<64x32xf32>, %[[Q:.*]]: vector<32x128xbf16>)
// CHECK: fa.tile_matmul %[[K]], %[[DS]], %[[ACC]] transpose_a : memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<128x32xbf16, #gpu.address_space<workgroup>>, vector<64x32xf32>
// CHECK: fa.tile_matmul %[[K]], %[[DST]], %[[ACC]] transpose_a transpose_b : memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<32x128xbf16, #gpu.address_space<workgroup>>, vector<64x32xf32>
// CHECK: fa.tile_matmul %[[Q]], %[[K]], %{{.*}} : vector<32x128xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, vector<32x64xf32>
// CHECK: fa.tile_matmul %[[Q]], %[[DST]], %{{.*}} transpose_b : vector<32x128xbf16>, memref<32x128xbf16, #gpu.address_space<workgroup>>, vector<32x32xf32>
func.func @orientations(%k: !keys, %ds: !ds, %dst: !dst, %acc: vector<64x32xf32>, %q: vector<32x128xbf16>) {
  %a = fa.tile_matmul %k, %ds, %acc transpose_a : !keys, !ds, vector<64x32xf32>
  %b = fa.tile_matmul %k, %dst, %acc transpose_a transpose_b : !keys, !dst, vector<64x32xf32>
  %zero64 = arith.constant dense<0.0> : vector<32x64xf32>
  %c = fa.tile_matmul %q, %k, %zero64 : vector<32x128xbf16>, !keys, vector<32x64xf32>
  %zero32 = arith.constant dense<0.0> : vector<32x32xf32>
  %d = fa.tile_matmul %q, %dst, %zero32 transpose_b : vector<32x128xbf16>, !dst, vector<32x32xf32>
  return
}
