// RUN: fa-opt %s --split-input-file --fa-tile-attention | FileCheck %s
// RUN: fa-opt %s --split-input-file --fa-tile-attention-grad | FileCheck %s --check-prefix=GRAD

// Strided views (one head of a fused QKV buffer: strides the kernel reads
// from its descriptor) stay views: the kernel's parameters, its #fa.param
// entries and every tile op keep the strided type; lse stays contiguous.
// CHECK: #fa.param<"q" : memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>>
// CHECK-SAME: #fa.param<"lse" : memref<?x?x?xf32>>
// CHECK-LABEL: gpu.func @forward
// CHECK-SAME: (%[[Q:[^:]*]]: memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %[[K:[^:]*]]: memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %[[V:[^:]*]]: memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %[[O:[^:]*]]: memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %[[LSE:[^:]*]]: memref<?x?x?xf32>)
// CHECK: fa.load_tile %[[Q]][{{.*}}] : memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>> -> vector<64x64xbf16>
// CHECK: fa.stage_tile %[[K]][{{.*}}] into %{{.*}} : memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, memref<64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: fa.stage_tile %[[V]][{{.*}}] into %{{.*}} : memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, memref<64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: fa.store_tile %{{.*}}, %[[O]][{{.*}}] : vector<64x64xbf16>, memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
// CHECK: fa.store_rows %{{.*}}, %[[LSE]][{{.*}}] : vector<64xf32>, memref<?x?x?xf32>
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
!s = memref<?x?x?xf32>
func.func @forward(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !s) {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t) lse(%lse : !s) causal
  return
}

// -----

// Views and contiguous tensors mix: here only q is a view (static strides
// too are a view the lowering indexes through them).
// CHECK-LABEL: gpu.func @mixed
// CHECK-SAME: (%[[Q:[^:]*]]: memref<2x4x100x64xf16, strided<[76800, 64, 768, 1], offset: 128>>, %[[K:[^:]*]]: memref<2x4x100x64xf16>
// CHECK: fa.load_tile %[[Q]][{{.*}}] : memref<2x4x100x64xf16, strided<[76800, 64, 768, 1], offset: 128>> -> vector<64x64xf16>
// CHECK: fa.stage_tile %[[K]][{{.*}}] into %{{.*}} : memref<2x4x100x64xf16>,
!q = memref<2x4x100x64xf16, strided<[76800, 64, 768, 1], offset: 128>>
!c = memref<2x4x100x64xf16>
func.func @mixed(%q: !q, %k: !c, %v: !c, %o: !c) {
  fa.attention ins(%q, %k, %v : !q, !c, !c) outs(%o : !c)
  return
}

// -----

// The backward's three kernels: q, k, v, out, dout read and dq, dk, dv
// written through the views; lse and delta contiguous.
// GRAD-LABEL: gpu.func @backward_delta
// GRAD-SAME: (%[[O:[^:]*]]: memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %[[DO:[^:]*]]: memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, %[[DELTA:[^:]*]]: memref<?x?x?xf32>)
// GRAD: fa.load_tile %[[DO]][{{.*}}] : memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>> -> vector<64x64xbf16>
// GRAD: fa.load_tile %[[O]][{{.*}}] : memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>> -> vector<64x64xbf16>
// GRAD: fa.store_rows %{{.*}}, %[[DELTA]]
// GRAD-LABEL: gpu.func @backward_dkdv
// GRAD-COUNT-4: fa.stage_tile {{.*}} : memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, memref<64x64xbf16, #gpu.address_space<workgroup>>
// GRAD-COUNT-2: fa.stage_rows {{.*}} : memref<?x?x?xf32>, memref<64xf32, #gpu.address_space<workgroup>>
// GRAD-COUNT-2: fa.column_broadcast_shared {{.*}} : memref<64xf32, #gpu.address_space<workgroup>> -> vector<64x64xf32>
// GRAD-COUNT-2: fa.store_tile {{.*}} : vector<64x64xbf16>, memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
// GRAD-LABEL: gpu.func @backward(
// GRAD-COUNT-2: fa.stage_tile {{.*}} : memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, memref<64x64xbf16, #gpu.address_space<workgroup>>
// GRAD-COUNT-2: fa.load_rows {{.*}} : memref<?x?x?xf32> -> vector<64xf32>
// GRAD-COUNT-2: fa.stage_tile {{.*}} : memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>, memref<64x64xbf16, #gpu.address_space<workgroup>>
// GRAD: fa.store_tile {{.*}} : vector<64x64xbf16>, memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
!s = memref<?x?x?xf32>
func.func @backward(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}
