//===- KernelFunctions.h - Functions that become kernels --------*- C++ -*-===//
//
// Every tiling pass turns a func.func holding one program-level op (and the
// return) into GPU kernels and records them in the module's fa.kernels for
// the manifest. This is the part they share.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FA_TRANSFORMS_KERNELFUNCTIONS_H
#define FA_DIALECT_FA_TRANSFORMS_KERNELFUNCTIONS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::fa {

/// Builds the kernels of `func` (whose body is `op`) before it, appending
/// their manifest entries to `kernels`.
using TileFunctionFn =
    function_ref<LogicalResult(func::FuncOp func, Operation *op,
                               SmallVectorImpl<NamedAttribute> &kernels)>;

/// Calls `tile` for every op of `module` that `isKernelOp` accepts, erases
/// its function, and adds the entries to the module's kKernelsAttr (marking
/// the module a GPU container). Fails, with a diagnostic, for such an op that
/// is not alone in a func.func, and when `tile` fails.
LogicalResult tileKernelFunctions(ModuleOp module,
                                  function_ref<bool(Operation *)> isKernelOp,
                                  TileFunctionFn tile);

} // namespace mlir::fa

#endif // FA_DIALECT_FA_TRANSFORMS_KERNELFUNCTIONS_H
