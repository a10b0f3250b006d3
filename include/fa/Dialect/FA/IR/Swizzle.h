//===- Swizzle.h - The shared-memory swizzle's constants --------*- C++ -*-===//
//
// TMA and wgmma read and write shared memory in 16-byte chunks permuted by a
// swizzle: chunk c of row r sits at chunk c ^ (r % 8) of its span. The ops'
// verifiers (FAAsyncOps.cpp), the passes that size their buffers
// (WarpSpecialize) and the lowerings (FAToNVGPU) all rely on these numbers,
// so they live here once.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FA_IR_SWIZZLE_H
#define FA_DIALECT_FA_IR_SWIZZLE_H

#include <cstdint>

namespace mlir::fa {

/// One vectorised access, and the unit the swizzle permutes.
constexpr int64_t kChunkBytes = 16;
/// Rows in one period of the swizzle's XOR pattern (the CUDA programming
/// guide's "repeats after"): 1024 bytes under the 128-byte swizzle.
constexpr int64_t kSwizzleRows = 8;
/// The widest swizzle's span (SWIZZLE_128B): a box row under it is at most
/// this wide, so wider tiles are stored as panels of one span each.
constexpr int64_t kWidestSwizzleBytes = 128;
/// f32 values in one row of a 128-byte-swizzled panel (the staged dQ
/// accumulator's boxes).
constexpr int64_t kF32PerWidestSwizzle = kWidestSwizzleBytes / 4;

} // namespace mlir::fa

#endif // FA_DIALECT_FA_IR_SWIZZLE_H
