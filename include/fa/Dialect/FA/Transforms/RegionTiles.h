//===- RegionTiles.h - Mask and score regions on score tiles ----*- C++ -*-===//
//
// The tiling passes copy fa.attention's (and fa.attention_grad's) mask and
// score regions onto each tile of scores as fa.mask_tile / fa.score_tile,
// with the values of the region's captures inside the kernel.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FA_TRANSFORMS_REGIONTILES_H
#define FA_DIALECT_FA_TRANSFORMS_REGIONTILES_H

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::fa {

/// Where a tile of scores sits: its first row and column (with `transposed`
/// rows are keys and columns queries), the bound of its columns (kv_len,
/// or the query length when transposed), its (batch, head).
struct TilePlace {
  Value row0, col0, colBound, batch, head;
  bool transposed = false;
};

/// The regions of an attention op and the kernel's values of its captures.
struct AttentionRegions {
  Region *mask = nullptr, *score = nullptr;
  bool causal = false;
  ValueRange captures;
  /// The op's document ids are sorted (kSortedDocumentIdsAttr).
  bool sortedDocumentIds = false;

  bool hasMask() const { return mask && !mask->empty(); }
  bool hasScore() const { return score && !score->empty(); }
};

/// `scores` through a copy of `region` (a score region, or the derivative
/// buildScoreDerivative made of one) as fa.score_tile.
Value applyScoreRegion(ImplicitLocOpBuilder &b, Region &region, Value scores,
                       const TilePlace &at, ValueRange captures);

/// `scores` (scaled) through the score region, then the mask: the mask
/// region (with causal) as fa.mask_tile, or causal and the column bound
/// alone as fa.apply_mask. Masked elements become -inf after the score
/// region, which never sees them.
Value applyRegions(ImplicitLocOpBuilder &b, const AttentionRegions &regions,
                   Value scores, const TilePlace &at);

} // namespace mlir::fa

#endif // FA_DIALECT_FA_TRANSFORMS_REGIONTILES_H
