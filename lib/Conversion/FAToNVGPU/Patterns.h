//===- Patterns.h - convert-fa-to-nvgpu patterns ----------------*- C++ -*-===//
//
// One pattern per op, defined by family: math on a lane's share in
// MathOps.cpp, loads, stores and copies in MemoryOps.cpp, products in
// TileMatmul.cpp (which dispatches to MmaSync.cpp, SplitTF32.cpp and
// WarpgroupMma.cpp). populateFAToNVGPUConversionPatterns lists them.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_CONVERSION_FATONVGPU_PATTERNS_H
#define FA_LIB_CONVERSION_FATONVGPU_PATTERNS_H

#include "fa/Conversion/FAToNVGPU/FAToNVGPU.h"
#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::fa {

struct ChipInfo;

/// A pattern whose lowering depends on the kernel (its thread count, whether
/// its products run as wgmma).
template <typename Op> struct KernelPattern : OpConversionPattern<Op> {
  KernelPattern(const TypeConverter &converter, MLIRContext *context,
                const FAToNVGPUPatternOptions &options)
      : OpConversionPattern<Op>(converter, context), options(options) {}

  FAToNVGPUPatternOptions options;
};

//===----------------------------------------------------------------------===//
// Math on a lane's share (MathOps.cpp; splat constants and elementwise ops
// in ../ElementwiseConversion.h)
//===----------------------------------------------------------------------===//

/// Row reduction: combine the lane's values of each of its two rows, then
/// across the four lanes that share the row (xor 1, xor 2), then with `acc`.
struct ConvertRowReduction : OpConversionPattern<vector::MultiDimReductionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(vector::MultiDimReductionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override;
};

/// Each entry of the lane's share takes the value of its row.
struct ConvertRowBroadcast : OpConversionPattern<RowBroadcastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RowBroadcastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override;
};

/// `tile * row_broadcast(alpha)` in a loop, the online softmax's rescale of
/// its accumulator: multiplying by exactly 1 changes nothing, and after the
/// first key tiles most tiles leave every row maximum, so alpha = 1. A warp
/// whose rows all have alpha == 1 skips the multiplies (one vote; the branch is
/// warp-uniform). Bit-identical to the plain product.
struct ConvertRowScale : OpConversionPattern<arith::MulFOp> {
  ConvertRowScale(const TypeConverter &converter, MLIRContext *context)
      : OpConversionPattern(converter, context, /*benefit=*/2) {}

  LogicalResult
  matchAndRewrite(arith::MulFOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override;
};

/// One comparison per element against the key length, and one for
/// causality, each of a constant (the element's offset from the lane's first
/// row and column) against one per-lane threshold:
///   col >= kv_len  <=>  dc >= kv_len - col0
///   col > row      <=>  dc - dr > row0 - col0
/// in 32-bit arithmetic, so that no per-element index is ever materialised.
struct ConvertApplyMask : OpConversionPattern<ApplyMaskOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ApplyMaskOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override;
};

//===----------------------------------------------------------------------===//
// Loads, stores and copies (MemoryOps.cpp)
//===----------------------------------------------------------------------===//

/// Each lane loads its pairs straight from global memory: the tile is read
/// once, so staging it through shared memory would not pay.
struct ConvertLoadTile : OpConversionPattern<LoadTileOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LoadTileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override;
};

/// The first lane of each row stores the row's value.
struct ConvertStoreRows : OpConversionPattern<StoreRowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(StoreRowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override;
};

/// Each lane loads the values of its rows (the inverse of store_rows).
struct ConvertLoadRows : OpConversionPattern<LoadRowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LoadRowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override;
};

/// Each lane loads the values of its columns (two per 8-column block), the
/// same for both of its rows in every row block.
struct ConvertColumnBroadcast : OpConversionPattern<ColumnBroadcastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ColumnBroadcastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override;
};

/// The block copies 16-byte chunks into the swizzled shared tile, between
/// barriers: readers of the previous contents are done before it starts, and
/// every chunk is visible to every warp after it.
struct ConvertStageTile : KernelPattern<StageTileOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(StageTileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override;
};

/// cp.async of each 16-byte chunk, rows past the sequence end zero-filled
/// (source size 0, from a clamped, valid address), then one commit group.
struct ConvertCopyTileAsync : KernelPattern<CopyTileAsyncOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(CopyTileAsyncOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override;
};

/// Each lane loads its columns' values from the staged rows (two adjacent
/// ones per 8-column block, one 8-byte load).
struct ConvertColumnBroadcastShared
    : OpConversionPattern<ColumnBroadcastSharedOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ColumnBroadcastSharedOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override;
};

/// Thread t copies value t (and t + threads, ...), zero past the sequence
/// end, between barriers as for fa.stage_tile.
struct ConvertStageRows : KernelPattern<StageRowsOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(StageRowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override;
};

/// cp.async of 4 bytes per value (a row of a [batch, heads, seq] buffer is
/// 16-byte aligned only when seq is a multiple of 4), zero-filled past the
/// sequence end, then one commit group.
struct ConvertCopyRowsAsync : KernelPattern<CopyRowsAsyncOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(CopyRowsAsyncOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override;
};

/// All of this thread's copies landed, then everyone's (a barrier).
struct ConvertWaitTiles : KernelPattern<WaitTilesOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(WaitTilesOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override;
};

/// Without a staging tile, each lane stores its pairs, skipping rows at or
/// beyond the sequence end. With one, the lanes' pairs go to the (swizzled)
/// staging tile, and the block then writes 16-byte chunks of whole rows,
/// consecutive threads on consecutive chunks: a warp's store covers whole
/// 32-byte sectors instead of eight half-used ones.
struct ConvertStoreTile : KernelPattern<StoreTileOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(StoreTileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override;
};

/// Between two barriers, each lane stores its values into the shared tile
/// where fa.stage_tile would have put them, swizzled and in wgmma's panels:
/// its pairs, or with `transposed` its 8 x 8 blocks by stmatrix .trans
/// (f16/bf16; f32 one element at a time); in wgmma kernels a
/// fence.proxy.async before the second barrier.
struct ConvertStoreTileShared : KernelPattern<StoreTileSharedOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(StoreTileSharedOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override;
};

//===----------------------------------------------------------------------===//
// Products (TileMatmul.cpp)
//===----------------------------------------------------------------------===//

/// acc += a @ b on tensor cores. B is read from shared memory either as
/// stored `[K][N]` or, with transpose_b, as `[N][K]` (so q @ k^T reads K as
/// staged). f32 takes three TF32 mma.sync products (SplitTF32.cpp),
/// f16/bf16 wgmma where the kernel asks for it (WarpgroupMma.cpp), else
/// mma.sync m16n8k16 (MmaSync.cpp).
struct ConvertTileMatmul : KernelPattern<TileMatmulOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(TileMatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override;
};

/// fa.philox and fa.apply_dropout as 32-bit arith (Philox.cpp).
void populatePhiloxPatterns(const TypeConverter &converter,
                            RewritePatternSet &patterns);

/// fa.mask_tile and fa.score_tile: the region evaluated per element
/// (RegionTiles.cpp).
void populateRegionTilePatterns(const TypeConverter &converter,
                                RewritePatternSet &patterns);

/// fa.accumulate_tile (atomic adds into a global f32 workspace),
/// fa.ordered_wait and fa.ordered_signal (blocks taking turns on it through
/// a global counter) (GlobalAccumulate.cpp).
void populateGlobalAccumulatePatterns(const TypeConverter &converter,
                                      RewritePatternSet &patterns,
                                      const FAToNVGPUPatternOptions &options);

/// Whether `chip` has red.global.add.v2.f32 (sm_90 on, and its PTX version
/// 8.1 on) for fa.accumulate_tile's pairs of adjacent columns.
bool hasVectorReductions(const ChipInfo &chip);

} // namespace mlir::fa

#endif // FA_LIB_CONVERSION_FATONVGPU_PATTERNS_H
