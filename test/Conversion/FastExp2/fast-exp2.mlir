// RUN: fa-opt %s --fa-fast-exp2 | FileCheck %s
// f32 exponentials that allow approximation (afn) become ex2.approx.ftz.f32,
// vectors element by element; the others stay for libdevice.

gpu.module @kernels {
  // CHECK-LABEL: func.func @scalar
  // CHECK-SAME: (%[[X:.*]]: f32)
  // CHECK: %[[E:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%[[X]]) : (f32) -> f32
  // CHECK-NOT: math.exp2
  // CHECK: return %[[E]]
  func.func @scalar(%x: f32) -> f32 {
    %e = math.exp2 %x fastmath<afn> : f32
    return %e : f32
  }

  // CHECK-LABEL: func.func @matrix
  // CHECK-SAME: (%[[V:.*]]: vector<2x2xf32>)
  // CHECK: %[[A:.*]] = vector.extract %[[V]][0, 0]
  // CHECK: %[[EA:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%[[A]])
  // CHECK: %[[B:.*]] = vector.extract %[[V]][0, 1]
  // CHECK: %[[EB:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%[[B]])
  // CHECK: %[[C:.*]] = vector.extract %[[V]][1, 0]
  // CHECK: %[[EC:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%[[C]])
  // CHECK: %[[D:.*]] = vector.extract %[[V]][1, 1]
  // CHECK: %[[ED:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%[[D]])
  // CHECK: %[[R:.*]] = vector.from_elements %[[EA]], %[[EB]], %[[EC]], %[[ED]] : vector<2x2xf32>
  // CHECK: return %[[R]]
  func.func @matrix(%v: vector<2x2xf32>) -> vector<2x2xf32> {
    %e = math.exp2 %v fastmath<fast> : vector<2x2xf32>
    return %e : vector<2x2xf32>
  }

  // CHECK-LABEL: func.func @kept
  // CHECK: math.exp2 %{{.*}} : f32
  // CHECK: math.exp2 %{{.*}} fastmath<nnan> : f32
  // CHECK: math.exp2 %{{.*}} fastmath<afn> : f64
  // CHECK: math.exp2 %{{.*}} fastmath<afn> : vector<4xf16>
  // CHECK-NOT: llvm.call_intrinsic
  func.func @kept(%x: f32, %d: f64, %h: vector<4xf16>) -> (f32, f32, f64, vector<4xf16>) {
    %precise = math.exp2 %x : f32
    %other = math.exp2 %x fastmath<nnan> : f32
    %e = math.exp2 %d fastmath<afn> : f64
    %f = math.exp2 %h fastmath<afn> : vector<4xf16>
    return %precise, %other, %e, %f : f32, f32, f64, vector<4xf16>
  }
}
