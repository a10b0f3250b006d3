//===- KernelFunctions.cpp - Functions that become kernels ----------------===//

#include "fa/Dialect/FA/Transforms/KernelFunctions.h"

#include "fa/Dialect/FA/Transforms/Passes.h"

using namespace mlir;

LogicalResult
mlir::fa::tileKernelFunctions(ModuleOp module,
                              function_ref<bool(Operation *)> isKernelOp,
                              TileFunctionFn tile) {
  SmallVector<std::pair<func::FuncOp, Operation *>> work;
  WalkResult walk = module.walk([&](Operation *op) {
    if (!isKernelOp(op))
      return WalkResult::advance();
    auto func = dyn_cast<func::FuncOp>(op->getParentOp());
    if (!func || func.getBody().front().getOperations().size() != 2) {
      op->emitOpError("expects to be the only operation (besides the "
                      "return) of a func.func, which becomes the kernel");
      return WalkResult::interrupt();
    }
    work.push_back({func, op});
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (work.empty())
    return success();

  SmallVector<NamedAttribute> kernels;
  if (auto existing = module->getAttrOfType<DictionaryAttr>(kKernelsAttr))
    llvm::append_range(kernels, existing.getValue());
  for (auto [func, op] : work) {
    if (failed(tile(func, op, kernels)))
      return failure();
    func.erase();
  }
  MLIRContext *context = module.getContext();
  module->setAttr(kKernelsAttr, DictionaryAttr::get(context, kernels));
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(context));
  return success();
}
