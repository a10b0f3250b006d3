// RUN: fa-opt %s --fa-grid-constant-params --split-input-file -verify-diagnostics | FileCheck %s
// The parameters listed in fa.grid_constant_params become 128-byte by-value
// grid constants; the list goes, the other parameters stay as they were.

gpu.module @kernels {
  // CHECK-LABEL: llvm.func @tma_kernel
  // CHECK-SAME: (%{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}, %{{.*}}: !llvm.ptr, %{{.*}}: i32, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant})
  // CHECK-NOT: fa.grid_constant_params
  llvm.func @tma_kernel(%k_map: !llvm.ptr, %out: !llvm.ptr, %rows: i32, %v_map: !llvm.ptr)
      attributes {nvvm.kernel, fa.grid_constant_params = array<i64: 0, 3>} {
    llvm.return
  }
  // CHECK-LABEL: llvm.func @plain_kernel
  // CHECK-SAME: (%{{.*}}: !llvm.ptr)
  llvm.func @plain_kernel(%out: !llvm.ptr) attributes {nvvm.kernel} {
    llvm.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{fa-grid-constant-params: expects parameter 1 of the kernel (listed in fa.grid_constant_params) to be an !llvm.ptr to its tensor map}}
  llvm.func @scalar_listed(%map: !llvm.ptr, %rows: i32)
      attributes {nvvm.kernel, fa.grid_constant_params = array<i64: 1>} {
    llvm.return
  }
}
