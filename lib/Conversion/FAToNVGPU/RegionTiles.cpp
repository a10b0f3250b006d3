//===- RegionTiles.cpp - Mask and score regions per element ---------------===//
//
// fa.mask_tile and fa.score_tile carry a copy of fa.attention's mask or score
// region. Each lane evaluates the region once per element of its share of
// the tile (TileLayout.h), with the element's query and key indices bound to
// the region's arguments: the region's ops are cloned per element and the
// canonicalizer and CSE that follow fold what the elements share (a row's
// document id, a head's slope). Only the tiles the classifier leaves partial
// carry a mask_tile; a score_tile runs on every tile.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "TileLayout.h"

#include <limits>

using namespace mlir;
using namespace mlir::fa;

namespace {
/// The indices of one element of a lane's share: its query and key.
struct ElementIndices {
  Value query, key;
};

/// Calls `fn(position, indices)` for every element of the lane's share of a
/// tile whose first row is `row0` and first column `col0` (rows are keys
/// when `transposed`).
void forEachElement(ImplicitLocOpBuilder &b, VectorType share, int64_t cols,
                    Value row0, Value col0, bool transposed,
                    function_ref<void(ArrayRef<int64_t>, ElementIndices)> fn) {
  int64_t rowBlocks = rowBlocksOf(share, cols);
  int64_t blocks = share.getDimSize(0) / rowBlocks;
  Lane lane = laneOf(b, rowBlocks);
  Value laneCol0 = arith::AddIOp::create(b, col0, lane.pairColumn);
  for (int64_t m = 0; m < rowBlocks; ++m)
    for (int64_t n = 0; n < blocks; ++n)
      for (int64_t v = 0; v < kValuesPerBlock; ++v) {
        Value row = laneRow(b, lane, row0, m, v / 2);
        Value col = arith::AddIOp::create(b, laneCol0,
                                          index(b, kColsPerBlock * n + v % 2));
        ElementIndices indices =
            transposed ? ElementIndices{col, row} : ElementIndices{row, col};
        fn({m * blocks + n, v}, indices);
      }
}

/// Clones `region`'s ops with its block arguments bound to `args`; returns
/// the value its fa.yield yields.
Value inlineRegion(ImplicitLocOpBuilder &b, Region &region, ValueRange args) {
  Block &block = region.front();
  IRMapping mapping;
  mapping.map(block.getArguments(), args);
  for (Operation &op : block.without_terminator())
    b.clone(op, mapping);
  return mapping.lookupOrDefault(
      cast<YieldOp>(block.getTerminator()).getValues().front());
}

SmallVector<Value> regionArgs(ArrayRef<Value> leading, ValueRange captures) {
  SmallVector<Value> args(leading);
  llvm::append_range(args, captures);
  return args;
}

struct ConvertMaskTile : OpConversionPattern<MaskTileOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MaskTileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value scores = adaptor.getScores();
    auto share = cast<VectorType>(scores.getType());
    Value negInf = arith::ConstantOp::create(
        b, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
    // Keys (queries when transposed) at or past kv_len are past the end.
    bool transposed = op.getTransposed();
    SmallVector<Value> elements;
    forEachElement(
        b, share, op.getScores().getType().getDimSize(1), adaptor.getRow(),
        adaptor.getCol(), transposed,
        [&](ArrayRef<int64_t> position, ElementIndices e) {
          Value bounded = transposed ? e.query : e.key;
          Value keep = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                             bounded, adaptor.getKvLen());
          if (op.getCausal())
            keep = arith::AndIOp::create(
                b, keep,
                arith::CmpIOp::create(b, arith::CmpIPredicate::ule, e.key,
                                      e.query));
          Value kept =
              inlineRegion(b, op.getMask(),
                           regionArgs({adaptor.getBatch(), adaptor.getHead(),
                                       e.query, e.key},
                                      adaptor.getCaptures()));
          keep = arith::AndIOp::create(b, keep, kept);
          Value value = vector::ExtractOp::create(b, scores, position);
          elements.push_back(arith::SelectOp::create(b, keep, value, negInf));
        });
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, share, elements);
    return success();
  }
};

struct ConvertScoreTile : OpConversionPattern<ScoreTileOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ScoreTileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value scores = adaptor.getScores();
    auto share = cast<VectorType>(scores.getType());
    SmallVector<Value> elements;
    forEachElement(b, share, op.getScores().getType().getDimSize(1),
                   adaptor.getRow(), adaptor.getCol(), op.getTransposed(),
                   [&](ArrayRef<int64_t> position, ElementIndices e) {
                     Value value =
                         vector::ExtractOp::create(b, scores, position);
                     elements.push_back(inlineRegion(
                         b, op.getScore(),
                         regionArgs({value, adaptor.getBatch(),
                                     adaptor.getHead(), e.query, e.key},
                                    adaptor.getCaptures())));
                   });
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, share, elements);
    return success();
  }
};
} // namespace

void mlir::fa::populateRegionTilePatterns(const TypeConverter &converter,
                                          RewritePatternSet &patterns) {
  patterns.add<ConvertMaskTile, ConvertScoreTile>(converter,
                                                  patterns.getContext());
}
