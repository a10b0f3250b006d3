//===- WarpSpecialize.h - Pieces shared by fa-warp-specialize's kernels --===//
//
// fa-warp-specialize splits two kinds of kernel: the forward
// (WarpSpecialize.cpp) and the backward's dK/dV kernel
// (WarpSpecializeKeyBlocks.cpp). These are the pieces both use.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_DIALECT_FA_TRANSFORMS_WARPSPECIALIZE_H
#define FA_LIB_DIALECT_FA_TRANSFORMS_WARPSPECIALIZE_H

#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::fa::warp_specialize {
/// One warpgroup of producer threads (setmaxnreg acts on whole warpgroups).
constexpr int64_t kProducerThreads = kThreadsPerWarpgroup;
/// Registers per thread after setmaxnreg: the producer warpgroup's and each
/// of the two computing warpgroups'.
struct RegisterSplit {
  int32_t producer, consumer;

  /// setmaxnreg only moves registers within the block's launch allocation
  /// (ptxas gives 384 threads at most 168 each: 64512 of the SM's 65536);
  /// an increase that does not fit waits forever.
  constexpr bool fitsTheBlock() const {
    return producer * kProducerThreads + consumer * 2 * kThreadsPerWarpgroup <=
           168 * 384;
  }
};
/// As FlashAttention-3 gives them: 24 * 128 + 240 * 256 = 64512.
constexpr RegisterSplit kRegisters = {24, 240};
/// A persistent producer also walks the tiles, whose indices spill at 24
/// (4 bytes), and those of strided views (the tensors' strides) at 32 (D=64
/// causal, 4 bytes); at 40 the computing warpgroups keep 232: 40 * 128 + 232
/// * 256 = 64512.
constexpr RegisterSplit kPersistentRegisters = {40, 232};
/// A dK/dV kernel with a dQ writer warp: its walkers (lse and delta on one
/// warp) and the writer's turn and row addresses spilled 20 bytes at 24;
/// the computing side fits in 232 with dS in shared memory and P^T in
/// registers only while dV's product runs (TileAttentionGrad.cpp).
constexpr RegisterSplit kDqWriterRegisters = {40, 232};
static_assert(kRegisters.fitsTheBlock() &&
                  kPersistentRegisters.fitsTheBlock() &&
                  kDqWriterRegisters.fitsTheBlock(),
              "setmaxnreg beyond the block's registers");

/// The kernel's manifest entry in its module's fa.kernels.
KernelAttr kernelEntry(gpu::GPUFuncOp kernel);

/// Replaces the kernel's entry in fa.kernels by `entry`.
void setKernelEntry(gpu::GPUFuncOp kernel, KernelAttr entry);

/// The kernel's parameter `name` (by its manifest entry).
BlockArgument paramNamed(gpu::GPUFuncOp kernel, KernelAttr entry,
                         StringRef name);

/// The tile index j of a slot `remui(j, S)`, as tileSlot makes it.
Value slotTileIndex(memref::SubViewOp slot, int64_t stages);

/// Releases `tile` of `ring` at the insertion point, once per warp (the
/// rings count warps).
RingReleaseOp releaseByFirstLanes(OpBuilder &b, Location loc,
                                  TypedValue<RingType> ring, Value tile);

/// `!nvgpu.tensormap.descriptor` of one head's `rows` rows by one 128-byte
/// panel of `tensor` ([batch, heads, seq, head_dim]), 128-byte swizzle, zero
/// fill beyond the sequence.
nvgpu::TensorMapDescriptorType tensorMapType(MemRefType tensor, int64_t rows);

/// The source and destination of a tile or row copy (fa.copy_tile_async,
/// fa.copy_rows_async), else nothing.
std::optional<std::pair<Value, Value>> copyEnds(Operation *op);

/// Finds the kernel's parameter `name` (into `tensor`) and collects into
/// `copies` its tile and row copies, each of which must fill a slot (a
/// memref.subview) of one buffer, which `buffer` is set to.
LogicalResult collectSlotCopies(gpu::GPUFuncOp kernel, KernelAttr entry,
                                StringRef name, BlockArgument &tensor,
                                Value &buffer,
                                SmallVectorImpl<Operation *> &copies,
                                StringRef pass);

/// Splits the block at `split` (an op of the kernel's entry block, before
/// which it only computes indices): `if (thread >= computeThreads)` the
/// producer (then, setmaxnreg down to `registers.producer`) else the
/// computing warpgroups, which run `split` and everything after it (up to
/// `registers.consumer`). Marked kWarpRolesAttr; the builder is left at the
/// end of the producer's (otherwise empty) block.
scf::IfOp splitByRole(ImplicitLocOpBuilder &b, Operation *split,
                      int64_t computeThreads, RegisterSplit registers);

/// Splits the backward's dK/dV kernel (WarpSpecializeKeyBlocks.cpp).
/// `computeThreads`: the block's threads before the split.
LogicalResult warpSpecializeKeyBlocks(gpu::GPUFuncOp kernel, KernelAttr entry,
                                      TileAttr config, int64_t computeThreads,
                                      StringRef pass);
} // namespace mlir::fa::warp_specialize

#endif // FA_LIB_DIALECT_FA_TRANSFORMS_WARPSPECIALIZE_H
