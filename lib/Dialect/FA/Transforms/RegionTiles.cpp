//===- RegionTiles.cpp - Mask and score regions on score tiles ------------===//

#include "fa/Dialect/FA/Transforms/RegionTiles.h"

#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::fa;

Value mlir::fa::applyScoreRegion(ImplicitLocOpBuilder &b, Region &region,
                                 Value scores, const TilePlace &at,
                                 ValueRange captures) {
  auto score =
      ScoreTileOp::create(b, scores.getType(), scores, at.row0, at.col0,
                          at.batch, at.head, captures, at.transposed);
  IRMapping mapping;
  region.cloneInto(&score.getScore(), mapping);
  return score;
}

Value mlir::fa::applyRegions(ImplicitLocOpBuilder &b,
                             const AttentionRegions &regions, Value scores,
                             const TilePlace &at) {
  if (regions.hasScore())
    scores = applyScoreRegion(b, *regions.score, scores, at, regions.captures);
  if (!regions.hasMask())
    return ApplyMaskOp::create(b, scores.getType(), scores, at.row0, at.col0,
                               at.colBound, regions.causal, at.transposed);
  auto mask = MaskTileOp::create(b, scores.getType(), scores, at.row0, at.col0,
                                 at.colBound, at.batch, at.head,
                                 regions.captures, regions.causal,
                                 at.transposed, regions.sortedDocumentIds);
  IRMapping mapping;
  regions.mask->cloneInto(&mask.getMask(), mapping);
  return mask;
}
