//===- MaskTileBounds.h - Which tiles a mask region keeps -------*- C++ -*-===//
//
// The bound analysis of a `mask` region (fa.attention, fa.attention_grad):
// for a loop over key tiles (or query tiles) seen from a block of query rows
// (or key rows), the tiles where the mask keeps nothing, everything, or
// something in between, as index values computed at run time by code built
// at compile time. The tile-eliminating passes split their loops at these
// bounds: empty tiles are never visited, full tiles skip the mask.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FA_TRANSFORMS_MASKTILEBOUNDS_H
#define FA_DIALECT_FA_TRANSFORMS_MASKTILEBOUNDS_H

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Region.h"

namespace mlir::fa {

/// Which index of the mask region a tile loop walks.
enum class MaskLoopDim { KvIdx, QIdx };

/// Tile-index intervals along the loop, as index Values built at `b`:
/// tiles outside [visitBegin, visitEnd) keep no element (never visited);
/// tiles in [fullBegin, fullEnd) keep every element (no mask evaluation
/// needed); visitBegin <= fullBegin <= fullEnd <= visitEnd, all within
/// [0, numTiles]. Any tile in the visit range but outside the full range is
/// partial.
struct MaskTileIntervals {
  Value visitBegin, fullBegin, fullEnd, visitEnd;
};

/// The loop walks tiles t = 0 .. numTiles-1 covering loop indices
/// [t*width, (t+1)*width); the other index ranges over
/// [fixedBegin, fixedBegin + fixedExtent) (the block's query rows, or key
/// rows for MaskLoopDim::QIdx). `batch`, `head`, `captures` are the values of
/// the region's other block arguments in the kernel (the region's ops that
/// read only them are cloned at `b`). Conservative: when the analysis cannot
/// decide (data-dependent conditions, unsigned comparisons), everything is
/// partial: visit [0, numTiles), full empty. Never wrong: a tile reported
/// full keeps every element; a tile outside the visit range keeps none.
/// Assumes the region's integer arithmetic does not overflow.
/// `width` and `fixedExtent` must be positive. An empty region keeps all.
///
/// `documentIdsSorted` is the caller's promise that every table the region
/// compares as `ids[b, q_idx] == ids[b, kv_idx]` (fa.attention's `document`
/// variant; the runtime checks it) is non-decreasing along the sequence
/// (dimension 1, of at least one position). Such a condition is then bounded
/// by two binary searches at run time (an scf.while each, reading the
/// table), exactly for the positions inside the table; positions outside it
/// (a block's rows or keys past the sequence) have no document and are left
/// to the caller's sequence-length masking. Without the promise it is
/// unknown.
MaskTileIntervals buildMaskTileIntervals(ImplicitLocOpBuilder &b, Region &mask,
                                         MaskLoopDim loopDim, Value fixedBegin,
                                         int64_t fixedExtent, int64_t width,
                                         Value numTiles, Value batch,
                                         Value head, ValueRange captures,
                                         bool documentIdsSorted = false);

} // namespace mlir::fa

#endif // FA_DIALECT_FA_TRANSFORMS_MASKTILEBOUNDS_H
