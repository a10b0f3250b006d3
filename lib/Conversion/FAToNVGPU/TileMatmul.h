//===- TileMatmul.h - fa.tile_matmul lowerings ------------------*- C++ -*-===//
//
// Each lowering emits `acc + a @ b` for one fa.tile_matmul on the lane's
// share of its operands (the adaptor's values) and returns the new
// accumulator share. ConvertTileMatmul (TileMatmul.cpp) picks one.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_CONVERSION_FATONVGPU_TILEMATMUL_H
#define FA_LIB_CONVERSION_FATONVGPU_TILEMATMUL_H

#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::fa {

/// f16/bf16 with m16n8k16 (MmaSync.cpp): per 16-wide k step, the A operand
/// of each row block is two adjacent column blocks of `a` (or an ldmatrix x4
/// when `a` is in shared memory); one ldmatrix x4 yields the B operands of
/// two adjacent 8-column output blocks, for every row block.
Value lowerMmaSyncMatmul(ImplicitLocOpBuilder &b, TileMatmulOp op,
                         TileMatmulOp::Adaptor adaptor);

/// f32 with m16n8k8 on TF32 tensor cores, in three products for close to
/// f32 accuracy (SplitTF32.cpp): x = big + small with big = x rounded to
/// TF32, and a @ b ~ small_a @ big_b + big_a @ small_b + big_a @ big_b.
/// The TF32 A operand wants columns (t, t + 4) of an 8-wide k block in lane
/// slots where the accumulator layout holds columns (2t, 2t + 1). A k
/// permutation applied to both operands leaves the product unchanged, so
/// slot t reads logical column 2t and slot t + 4 column 2t + 1, in A and
/// in B alike: no data moves between lanes.
Value lowerSplitTF32Matmul(ImplicitLocOpBuilder &b, TileMatmulOp op,
                           TileMatmulOp::Adaptor adaptor);

/// The rows (M) of a product one warpgroup multiplies on wgmma (m64).
constexpr int64_t kWarpgroupRows = 4 * kMmaRows;

/// f16/bf16 on Hopper warpgroup MMAs (WarpgroupMma.cpp): each 4-warp group
/// multiplies its 64 rows of A by all of B, one wgmma per 16-wide k step.
/// The accumulator layout of m64nNk16 is the m16n8 layout of each warp's 16
/// rows repeated over N / 8 column blocks, i.e. the lane's share as it is; a
/// register A (the probabilities) is the m16n8k16 A fragment per warp, as
/// for mma.sync. Shared tiles have 128-byte rows whose 16-byte chunks are
/// swizzled by row % 8, which is wgmma's 128-byte swizzle: A and a
/// transposed B (stored [N][K]) are K-major, a k step 32 bytes further
/// along the rows; an untransposed B (stored [K][N]) and a transposed A
/// (stored [K][M], each warpgroup reading its 64 columns) are MN-major, a k
/// step 16 rows further down. The product is issued where `op` was and
/// waited for just before its first use.
Value lowerWarpgroupMatmul(ImplicitLocOpBuilder &b, TileMatmulOp op,
                           TileMatmulOp::Adaptor adaptor);

/// Issues one mma.sync into 8-column block `block` of the accumulator.
Value mmaIntoBlock(ImplicitLocOpBuilder &b, NVVM::MMATypes ptxType,
                   int64_t kSize, ValueRange aRegs, ValueRange bRegs, Value acc,
                   int64_t block);

/// An f16x2 pair is passed as is; a bf16x2 pair as its 32 bits.
Value packPair(ImplicitLocOpBuilder &b, Type element, Value pair);

/// The four A registers of k step `kStep` of the row block whose column
/// blocks start at `firstBlock`: column blocks 2k and 2k + 1, each holding
/// pairs of rows r and r + 8.
SmallVector<Value> operandRegisters(ImplicitLocOpBuilder &b, Type element,
                                    Value a, int64_t firstBlock, int64_t kStep);

} // namespace mlir::fa

#endif // FA_LIB_CONVERSION_FATONVGPU_TILEMATMUL_H
