//===- PassSupport.h - What every fa pass and conversion shares -*- C++ -*-===//
//
// Errors that name their pass: every fa pass and conversion starts its
// diagnostics with its flag ("fa-tile-attention: ..."), so that a failure in
// fa-to-ptx, a pipeline of a dozen passes, says which one refused the input.
// The flag comes from the pass itself (Pass::getArgument(), generated from
// Passes.td), never typed again.
//
// The walk most of them are: kernel by kernel, stopping at the first kernel
// the pass refuses.
//
//===----------------------------------------------------------------------===//

#ifndef FA_SUPPORT_PASSSUPPORT_H
#define FA_SUPPORT_PASSSUPPORT_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"

namespace mlir::fa {

/// An error at `op` whose message starts "<pass>: ", `pass` being the flag of
/// the pass reporting it (its getArgument()). Like op->emitError(), it notes
/// the operation when the context prints ops on diagnostics.
inline InFlightDiagnostic emitPassError(Operation *op, StringRef pass) {
  InFlightDiagnostic diag = op->emitError();
  diag << pass << ": ";
  return diag;
}

/// An error at `loc` whose message starts "<pass>: ".
inline InFlightDiagnostic emitPassError(Location loc, StringRef pass) {
  InFlightDiagnostic diag = emitError(loc);
  diag << pass << ": ";
  return diag;
}

/// Calls `rewrite` on each kernel (gpu.func) under `root`, in order, and
/// stops at the first that fails (`rewrite` has reported why): the body of
/// the passes that work kernel by kernel.
inline LogicalResult
forEachKernel(Operation *root,
              function_ref<LogicalResult(gpu::GPUFuncOp)> rewrite) {
  WalkResult result = root->walk([&](gpu::GPUFuncOp kernel) {
    return failed(rewrite(kernel)) ? WalkResult::interrupt()
                                   : WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

} // namespace mlir::fa

#endif // FA_SUPPORT_PASSSUPPORT_H
