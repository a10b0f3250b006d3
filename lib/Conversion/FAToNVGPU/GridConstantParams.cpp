//===- GridConstantParams.cpp - Tensor maps as __grid_constant__ params ---===//
//
// The half of a tensor-map parameter's lowering that MLIR 22 cannot express
// on gpu.func (AsyncRing.cpp says why): on each llvm.func whose
// `fa.grid_constant_params` lists parameters, each listed `!llvm.ptr`
// parameter becomes a 128-byte by-value, 64-byte-aligned grid constant
// (CUDA's `const __grid_constant__ CUtensorMap`), and the list goes.
//
//===----------------------------------------------------------------------===//

#include "AsyncRing.h"

#include "fa/Conversion/Passes.h"
#include "fa/Support/PassSupport.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::fa {
#define GEN_PASS_DEF_FAGRIDCONSTANTPARAMS
#include "fa/Conversion/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {
/// A CUtensorMap: 128 bytes, 64-byte aligned (cuda.h).
constexpr int64_t kTensorMapBytes = 128;
constexpr int64_t kTensorMapAlignment = 64;

struct FAGridConstantParamsPass
    : public mlir::fa::impl::FAGridConstantParamsBase<
          FAGridConstantParamsPass> {
  using Base::Base;

  void runOnOperation() override {
    WalkResult result = getOperation()->walk([&](LLVM::LLVMFuncOp func) {
      return failed(markParams(func)) ? WalkResult::interrupt()
                                      : WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

  LogicalResult markParams(LLVM::LLVMFuncOp func) {
    auto params =
        func->getAttrOfType<DenseI64ArrayAttr>(kGridConstantParamsAttr);
    if (!params)
      return success();
    Builder b(func.getContext());
    auto byval = LLVM::LLVMArrayType::get(b.getI8Type(), kTensorMapBytes);
    for (int64_t index : params.asArrayRef()) {
      if (index < 0 || index >= func.getNumArguments() ||
          !isa<LLVM::LLVMPointerType>(func.getArgument(index).getType()))
        return emitPassError(func, getArgument())
               << "expects parameter " << index << " of the kernel (listed in "
               << kGridConstantParamsAttr
               << ") to be an !llvm.ptr to its tensor map";
      func.setArgAttr(index, LLVM::LLVMDialect::getByValAttrName(),
                      TypeAttr::get(byval));
      func.setArgAttr(index, LLVM::LLVMDialect::getAlignAttrName(),
                      b.getI64IntegerAttr(kTensorMapAlignment));
      func.setArgAttr(index, NVVM::NVVMDialect::getGridConstantAttrName(),
                      b.getUnitAttr());
    }
    func->removeAttr(kGridConstantParamsAttr);
    return success();
  }
};
} // namespace
