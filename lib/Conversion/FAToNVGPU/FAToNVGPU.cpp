//===- FAToNVGPU.cpp - Tile ops onto warps and tensor cores ---------------===//
//
// The warp-level lowering: every tile-level fa op of a kernel becomes code on
// each lane's share of its tiles (the distribution is described in
// TileLayout.h). The patterns live by family: MathOps.cpp, MemoryOps.cpp,
// and the products in TileMatmul.cpp, which dispatches to MmaSync.cpp
// (mma.sync + ldmatrix), SplitTF32.cpp (f32 as three TF32 products) and
// WarpgroupMma.cpp (Hopper wgmma). This file lists them and runs them on
// each kernel.
//
//===----------------------------------------------------------------------===//

#include "fa/Conversion/FAToNVGPU/FAToNVGPU.h"
#include "fa/Conversion/Passes.h"
#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Support/PassSupport.h"
#include "fa/Target/Chips.h"

#include "../ElementwiseConversion.h"
#include "AsyncRing.h"
#include "Patterns.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::fa {
#define GEN_PASS_DEF_CONVERTFATONVGPU
#include "fa/Conversion/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

void mlir::fa::populateFAToNVGPUConversionPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns,
    const FAToNVGPUPatternOptions &options) {
  MLIRContext *context = patterns.getContext();
  // Math on a lane's share (MathOps.cpp).
  if (options.skipUnitRescale)
    // acc * row_broadcast(alpha) in a loop: skipped by warps whose alpha is 1.
    patterns.add<ConvertRowScale>(converter, context);
  // Splat constants: splats of the share.
  patterns.add<ConvertSplatConstant>(converter, context);
  // Elementwise arith/math: the same op on the shares.
  patterns.add<ConvertElementwise>(converter, context);
  // Broadcasts of scalars: broadcasts into the share.
  patterns.add<ConvertScalarBroadcast>(converter, context);
  // Row reductions: within the lane, then xor shuffles over its row's lanes.
  patterns.add<ConvertRowReduction>(converter, context);
  // fa.row_broadcast: each entry takes its row's value.
  patterns.add<ConvertRowBroadcast>(converter, context);
  // fa.apply_mask: per-element compares against per-lane thresholds.
  patterns.add<ConvertApplyMask>(converter, context);
  // fa.philox, fa.apply_dropout: Philox rounds in 32-bit arith (Philox.cpp).
  populatePhiloxPatterns(converter, patterns);
  // fa.mask_tile, fa.score_tile: the region per element (RegionTiles.cpp).
  populateRegionTilePatterns(converter, patterns);
  // Loads, stores and copies (MemoryOps.cpp).
  // fa.load_tile: each lane loads its pairs from global memory.
  patterns.add<ConvertLoadTile>(converter, context);
  // fa.store_rows: the first lane of each row stores its value.
  patterns.add<ConvertStoreRows>(converter, context);
  // fa.load_rows: each lane loads its rows' values.
  patterns.add<ConvertLoadRows>(converter, context);
  // fa.column_broadcast: each lane loads its columns' values.
  patterns.add<ConvertColumnBroadcast>(converter, context);
  // fa.column_broadcast_shared: the same from rows staged in shared memory.
  patterns.add<ConvertColumnBroadcastShared>(converter, context);
  // fa.wait_tiles: cp.async wait, then a barrier.
  patterns.add<ConvertWaitTiles>(converter, context, options);
  // fa.store_tile: per-lane stores, or block-wide through a staging tile.
  patterns.add<ConvertStoreTile>(converter, context, options);
  // fa.store_tile_shared: each lane's values into a shared tile, as staged.
  patterns.add<ConvertStoreTileShared>(converter, context, options);
  // fa.stage_tile: block-wide 16-byte copies into a swizzled shared tile.
  patterns.add<ConvertStageTile>(converter, context, options);
  // fa.copy_tile_async: the same copies as cp.async, one commit group.
  patterns.add<ConvertCopyTileAsync>(converter, context, options);
  // fa.stage_rows, fa.copy_rows_async: a value per thread, into shared.
  patterns.add<ConvertStageRows, ConvertCopyRowsAsync>(converter, context,
                                                       options);
  // fa.accumulate_tile, fa.ordered_wait, fa.ordered_signal: atomic adds
  // into a global workspace, in turns over a counter (GlobalAccumulate.cpp).
  populateGlobalAccumulatePatterns(converter, patterns, options);
  // Products (TileMatmul.cpp).
  // fa.tile_matmul: split TF32 for f32, else wgmma or mma.sync.
  patterns.add<ConvertTileMatmul>(converter, context, options);
}

namespace {
/// The 16-row blocks each warp owns (1 or 2): block_m / (16 x warps), 1
/// without a block_m. Errors name `pass`.
FailureOr<int64_t> rowBlocksPerWarp(gpu::GPUFuncOp func, int64_t numWarps,
                                    StringRef pass) {
  int64_t blockM =
      getTileConfig(func).getBlockM().value_or(numWarps * kMmaRows);
  for (int64_t rowBlocks : {1, 2})
    if (blockM == rowBlocks * numWarps * kMmaRows)
      return rowBlocks;
  return emitPassError(func, pass)
             << "fa.tile block_m (" << blockM
             << ") must be 16 or 32 x the kernel's " << numWarps << " warps",
         failure();
}

struct ConvertFAToNVGPUPass
    : public mlir::fa::impl::ConvertFAToNVGPUBase<ConvertFAToNVGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    targetChip = lookupChip(chip);
    if (!targetChip) {
      emitPassError(getOperation()->getLoc(), getArgument())
          << "unsupported chip '" << chip
          << "' (supported: " << getSupportedChipList() << ")";
      return signalPassFailure();
    }
    if (failed(forEachKernel(getOperation(), [&](gpu::GPUFuncOp func) {
          return convertKernel(func);
        })))
      signalPassFailure();
  }

  LogicalResult convertKernel(gpu::GPUFuncOp func) {
    // Row-wise kernels have a lowering of their own (convert-fa-rows-to-gpu).
    if (func->hasAttr(kRowsConfigAttr))
      return success();
    std::optional<ArrayRef<int32_t>> blockSize = func.getKnownBlockSize();
    if (!blockSize || (*blockSize)[0] < kThreadsPerWarp ||
        (*blockSize)[0] > kMaxAttentionWarps * kThreadsPerWarp ||
        (*blockSize)[0] % kThreadsPerWarp != 0 || (*blockSize)[1] != 1 ||
        (*blockSize)[2] != 1) {
      bool hasTileOps = false;
      func.walk([&](Operation *op) {
        hasTileOps |= isa<FADialect>(op->getDialect());
      });
      if (hasTileOps)
        return emitPassError(func, getArgument())
               << "expects known_block_size = [32 * warps, 1, 1] with 1 to "
               << kMaxAttentionWarps << " warps on a kernel with tile ops";
      return success();
    }
    // A warp-specialised kernel's producer threads (fa-warp-specialize)
    // follow the computing ones, which the tiles are distributed over.
    int64_t producerThreads = 0;
    if (auto producers = func->getAttrOfType<IntegerAttr>(kProducerThreadsAttr))
      producerThreads = producers.getInt();
    int64_t numThreads = (*blockSize)[0] - producerThreads;
    if (numThreads < kThreadsPerWarp)
      return emitPassError(func, getArgument())
             << "expects computing threads besides the " << producerThreads
             << " producer threads of " << kProducerThreadsAttr;
    FailureOr<int64_t> rowBlocks =
        rowBlocksPerWarp(func, numThreads / kThreadsPerWarp, getArgument());
    if (failed(rowBlocks))
      return failure();
    int64_t blockRows = numThreads / kThreadsPerWarp * kMmaRows * *rowBlocks;

    // TMA rings and tensor-map parameters first (AsyncRing.cpp): they
    // become nvgpu ops on scalars and memrefs, which the conversion keeps.
    if (failed(lowerTensorMapParams(func)) || failed(lowerAsyncRings(func)))
      return failure();
    MLIRContext *context = &getContext();
    TileTypeConverter converter(blockRows, *rowBlocks);
    ConversionTarget target(*context);
    target.addIllegalDialect<FADialect>();
    target.markUnknownOpDynamicallyLegal(
        [&](Operation *op) { return converter.isLegal(op); });
    FAToNVGPUPatternOptions options;
    options.numThreads = numThreads;
    TileAttr config = getTileConfig(func);
    options.skipUnitRescale = config.getSkipUnitRescale();
    options.warpgroupMma = config.getWgmma();
    options.vectorReductions = hasVectorReductions(*targetChip);
    // wgmma exists only in sm_90a's architecture-specific instruction set.
    if (options.warpgroupMma && !targetChip->warpgroupMma)
      return emitPassError(func, getArgument())
             << "wgmma = true needs chip sm_90a (Hopper's wgmma.mma_async), "
                "not "
             << chip;
    RewritePatternSet patterns(context);
    populateFAToNVGPUConversionPatterns(converter, patterns, options);
    scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns,
                                                         target);
    if (failed(applyPartialConversion(func, target, std::move(patterns))))
      return failure();
    return producerThreads ? syncComputingThreadsOnly(func, numThreads)
                           : success();
  }

  /// In a warp-specialised kernel the producer warpgroup never reaches the
  /// computing warpgroups' barriers (a wait_tiles' gpu.barrier, which would
  /// wait for every thread of the block): those become named barrier 1 over
  /// the computing threads alone (bar.sync 1, n). Barrier 0 stays the
  /// block's, which the rings' creation uses before the split.
  LogicalResult syncComputingThreadsOnly(gpu::GPUFuncOp func,
                                         int64_t computeThreads) {
    SmallVector<scf::IfOp> splits;
    func.walk([&](scf::IfOp split) {
      if (split->hasAttr(kWarpRolesAttr))
        splits.push_back(split);
    });
    if (splits.size() != 1)
      return emitPassError(func, getArgument())
             << "expects one scf.if marked " << kWarpRolesAttr
             << " in a kernel with " << kProducerThreadsAttr << ", found "
             << splits.size();
    SmallVector<gpu::BarrierOp> barriers;
    splits.front().getElseRegion().walk(
        [&](gpu::BarrierOp barrier) { barriers.push_back(barrier); });
    IRRewriter b(func.getContext());
    for (gpu::BarrierOp barrier : barriers) {
      b.setInsertionPoint(barrier);
      Location loc = barrier.getLoc();
      Value id = arith::ConstantIntOp::create(b, loc, kComputingBarrierId, 32);
      Value threads = arith::ConstantIntOp::create(b, loc, computeThreads, 32);
      NVVM::BarrierOp::create(b, loc, TypeRange{}, id, threads,
                              NVVM::BarrierReductionAttr(), Value());
      b.eraseOp(barrier);
    }
    return success();
  }

  /// The entry of the `chip` option.
  const ChipInfo *targetChip = nullptr;
};
} // namespace
