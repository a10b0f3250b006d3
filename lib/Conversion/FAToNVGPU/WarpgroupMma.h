//===- WarpgroupMma.h - Hopper warpgroup MMA (wgmma) helpers ----*- C++ -*-===//
//
// The pieces of a wgmma product that do not depend on the fa ops: matrix
// descriptors of shared tiles, a product issued as one asm block (one commit
// group), and the wait that makes its results readable.
//
//===----------------------------------------------------------------------===//

#ifndef FA_CONVERSION_FATONVGPU_WARPGROUPMMA_H
#define FA_CONVERSION_FATONVGPU_WARPGROUPMMA_H

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::fa {

/// Bytes of one row of a swizzle atom of `tile`, one swizzle run (128, or
/// 64 for rows of 64 or 192 bytes; see swizzleRunChunks), and of its 8-row
/// group.
int64_t swizzleAtomRowBytes(MemRefType tile);
int64_t swizzleAtomBytes(MemRefType tile);

/// The wgmma matrix descriptor of a swizzled operand in shared memory that
/// starts `byteOffset` bytes into `tile` (a workgroup memref, 1024-byte
/// aligned, stored in panels one swizzle atom wide): start address, leading
/// and stride byte offsets, swizzle mode 128B or 64B (the tile's atom).
Value sharedMatrixDescriptor(ImplicitLocOpBuilder &b, Value tile,
                             Value byteOffset, int64_t leadingBytes,
                             int64_t strideBytes);

/// The operands of one k=16 step of a warpgroup product: A as a descriptor
/// or as four 32-bit registers (the m16n8k16 A fragment of each warp's 16
/// rows), B as a descriptor. A descriptor is `base + delta`: the steps of
/// one operand share the base (the first step's descriptor) and differ by
/// a constant, added inside the asm block (see issueWarpgroupMma).
struct WarpgroupMmaStep {
  Value aDescriptor;
  int64_t aDelta = 0;
  SmallVector<Value, 4> aRegisters;
  Value bDescriptor;
  int64_t bDelta = 0;
};

/// Issues acc = A @ B + acc (or A @ B when `acc` is empty) for a 64 x n f32
/// accumulator, `acc` holding the lane's n / 2 values in wgmma's order, as
/// one commit group: one asm block fences, issues every step and commits.
/// `elementType` is "bf16" or "f16"; `mnMajorA` reads a shared A (every
/// step's aDescriptor) as stored [K][M] (M contiguous) rather than [M][K];
/// `mnMajorB` reads B as stored [K][N] (N contiguous) rather than [N][K].
/// The values returned are still being written: read them only through
/// waitForWarpgroupMma.
SmallVector<Value> issueWarpgroupMma(ImplicitLocOpBuilder &b,
                                     StringRef elementType, int64_t n,
                                     bool mnMajorA, bool mnMajorB,
                                     ArrayRef<Value> acc,
                                     ArrayRef<WarpgroupMmaStep> steps);

/// Waits until at most `pending` commit groups of this thread are in flight
/// and returns `issued` (the results of an issueWarpgroupMma whose group is
/// older than those) as values that are safe to read. The values pass
/// through the asm block as tied operands, so nothing reads them before the
/// wait.
SmallVector<Value> waitForWarpgroupMma(ImplicitLocOpBuilder &b,
                                       ArrayRef<Value> issued, int64_t pending);

} // namespace mlir::fa

#endif // FA_CONVERSION_FATONVGPU_WARPGROUPMMA_H
