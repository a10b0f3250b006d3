//===- AsyncRing.h - TMA rings and tensor-map parameters --------*- C++ -*-===//
//
// The TMA ring ops (FAAsyncOps.td) lower by rewriting each ring's uses in
// place (AsyncRing.cpp); convert-fa-to-nvgpu calls both functions on a
// kernel before its warp-level conversion.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_CONVERSION_FATONVGPU_ASYNCRING_H
#define FA_LIB_CONVERSION_FATONVGPU_ASYNCRING_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::fa {

/// On a kernel: the indices, among its parameters after
/// convert-gpu-to-nvvm, of the tensor maps it takes by value
/// (--fa-grid-constant-params gives them byval and nvvm.grid_constant).
inline constexpr llvm::StringLiteral kGridConstantParamsAttr =
    "fa.grid_constant_params";

/// Lowers every `fa.ring_create` of `func` and the ring ops using it to
/// nvgpu mbarrier and TMA ops.
LogicalResult lowerAsyncRings(gpu::GPUFuncOp func);

/// Turns each `!nvgpu.tensormap.descriptor` parameter of the kernel into an
/// `!llvm.ptr` (cast back to the descriptor for its uses) and lists it in
/// kGridConstantParamsAttr. Fails on a non-kernel function with one.
LogicalResult lowerTensorMapParams(gpu::GPUFuncOp func);

} // namespace mlir::fa

#endif // FA_LIB_CONVERSION_FATONVGPU_ASYNCRING_H
