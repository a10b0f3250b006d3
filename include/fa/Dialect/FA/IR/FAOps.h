//===- FAOps.h - Operations of the fa dialect -------------------*- C++ -*-===//

#ifndef FA_DIALECT_FA_IR_FAOPS_H
#define FA_DIALECT_FA_IR_FAOPS_H

#include "fa/Dialect/FA/IR/FAAttrs.h"
#include "fa/Dialect/FA/IR/FADialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <string>

namespace mlir::fa {
/// Head dimensions the kernels are generated for.
ArrayRef<int64_t> getSupportedHeadDims();

/// Threads in a warp.
inline constexpr int64_t kThreadsPerWarp = 32;
/// Threads in a warpgroup: the four warps a wgmma (and a setmaxnreg) spans.
inline constexpr int64_t kThreadsPerWarpgroup = 4 * kThreadsPerWarp;
/// Rows of one row block of a tile: the M of the m16n8k16 instruction. A
/// warp owns one or two row blocks.
inline constexpr int64_t kMmaRows = 16;
/// The most warps of an attention kernel: 512 threads, whose 32-row blocks
/// make the largest query block (512 rows). The lowering unrolls each warp's
/// share of a tile, so this and kMaxBlockN bound its work and registers.
inline constexpr int64_t kMaxAttentionWarps = 16;
/// The longest tile an attention kernel's loop walks: wgmma's largest N.
/// Longer tiles only made compile time and memory grow (the copies are
/// unrolled) until the shared memory was too small.
inline constexpr int64_t kMaxBlockN = 256;
/// Consecutive columns a thread of a row-wise kernel owns together: 16 bytes
/// of f16/bf16, the unit of a vectorised access.
inline constexpr int64_t kRowChunk = 8;
/// The threads of a CUDA block at most.
inline constexpr int64_t kMaxThreadsPerBlock = 1024;
/// The values of a block one thread of a row-wise kernel may hold: twice the
/// library's largest (8192 columns over 256 threads).
inline constexpr int64_t kMaxRowValuesPerThread = 64;

/// How a row-wise kernel spreads an `rows x cols` block over `threads`: each
/// row gets `threads / rows` consecutive threads, and thread `t` of a row
/// owns the kRowChunk-column chunks `t, t + threadsPerRow, ...`, so a row's
/// threads read consecutive 16-byte pieces together.
struct RowsLayout {
  int64_t rows = 1, cols = 0, threads = 0;

  int64_t threadsPerRow() const { return threads / rows; }
  int64_t chunksPerThread() const {
    return cols / (kRowChunk * threadsPerRow());
  }
  /// Elements of a block one thread holds.
  int64_t valuesPerThread() const { return chunksPerThread() * kRowChunk; }
  /// Why the layout cannot be built, or an empty string.
  std::string whyInvalid() const;
};
} // namespace mlir::fa

#define GET_TYPEDEF_CLASSES
#include "fa/Dialect/FA/IR/FAOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "fa/Dialect/FA/IR/FAOps.h.inc"

#endif // FA_DIALECT_FA_IR_FAOPS_H
