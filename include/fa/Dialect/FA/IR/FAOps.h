//===- FAOps.h - Operations of the fa dialect -------------------*- C++ -*-===//

#ifndef FA_DIALECT_FA_IR_FAOPS_H
#define FA_DIALECT_FA_IR_FAOPS_H

#include "fa/Dialect/FA/IR/FADialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::fa {
/// Head dimensions the kernels are generated for.
ArrayRef<int64_t> getSupportedHeadDims();

/// Threads in a warp.
inline constexpr int64_t kThreadsPerWarp = 32;
/// Rows of one row block of a tile: the M of the m16n8k16 instruction. A
/// warp owns one or two row blocks.
inline constexpr int64_t kMmaRows = 16;
/// Function attribute overriding the tiling options for one kernel, recorded
/// on the generated kernel for the passes after tiling.
inline constexpr llvm::StringLiteral kTileConfigAttr = "fa.tile";
/// Integer entry `name` of `kernel`'s tile configuration (kTileConfigAttr),
/// or `fallback` when the kernel has no such entry.
int64_t getTileConfigEntry(Operation *kernel, StringRef name, int64_t fallback);
} // namespace mlir::fa

#define GET_OP_CLASSES
#include "fa/Dialect/FA/IR/FAOps.h.inc"

#endif // FA_DIALECT_FA_IR_FAOPS_H
