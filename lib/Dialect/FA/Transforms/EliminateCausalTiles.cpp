//===- EliminateCausalTiles.cpp - Skip and unmask key tiles ---------------===//
//
// A key tile j (keys [j*BN, (j+1)*BN)) seen from the query rows
// [row0, row0 + BM) of a block is
//   - empty   if every key is masked: causal and j*BN > row0 + BM - 1;
//   - full    if no key is masked: (j+1)*BN <= kv_len and, when causal,
//             (j+1)*BN - 1 <= row0;
//   - partial otherwise (the diagonal, the sequence tail).
// Full tiles come first and empty tiles last, so the loop over tiles becomes
// [0, numFull) without a mask then [numFull, numVisited) with it, and the
// empty tiles are never visited. The classification is a function of the
// mask op's operands only, so other structured masks (sliding windows) can
// extend `classifyTiles` without touching the loop surgery.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FA/Transforms/MaskTileBounds.h"
#include "fa/Dialect/FA/Transforms/Passes.h"
#include "fa/Support/Builders.h"
#include "fa/Support/PassSupport.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Matchers.h"

namespace mlir::fa {
#define GEN_PASS_DEF_FAELIMINATECAUSALTILES
#include "fa/Dialect/FA/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {
/// Where a loop's tiles switch from full to partial and from partial to empty.
struct TileBounds {
  Value numFull, numVisited;
};

/// The tile width of a loop whose tiles start at `tileStart` (`iv * BN`).
std::optional<int64_t> tileWidth(scf::ForOp loop, Value tileStart) {
  auto mul = tileStart.getDefiningOp<arith::MulIOp>();
  APInt width;
  if (mul && mul.getLhs() == loop.getInductionVar() &&
      matchPattern(mul.getRhs(), m_ConstantInt(&width)))
    return width.getSExtValue();
  return std::nullopt;
}

TileBounds classifyTiles(ImplicitLocOpBuilder &b, scf::ForOp loop,
                         ApplyMaskOp mask, int64_t blockN) {
  int64_t blockM = mask.getScores().getType().getDimSize(0);
  Value width = index(b, blockN);
  // Tiles entirely below kv_len.
  Value numFull = arith::DivUIOp::create(b, mask.getKvLen(), width);
  Value numVisited = loop.getUpperBound();
  if (mask.getCausal()) {
    Value row0 = mask.getRow();
    // Tiles entirely at or left of the block's first row.
    Value fullCausal = arith::DivUIOp::create(
        b, arith::AddIOp::create(b, row0, index(b, 1)), width);
    numFull = arith::MinUIOp::create(b, numFull, fullCausal);
    // Tiles starting at or left of the block's last row.
    Value lastVisible = arith::CeilDivUIOp::create(
        b, arith::AddIOp::create(b, row0, index(b, blockM)), width);
    numVisited = arith::MinUIOp::create(b, numVisited, lastVisible);
  }
  numFull = arith::MinUIOp::create(b, numFull, numVisited);
  return {numFull, numVisited};
}

/// The causal mask's intervals (key not after query) for tiles of `width`
/// along the loop, the block's other index in [fixed0, fixed0 + extent):
/// along keys (fixed queries) tile t is full when its last key is at most
/// the first query, visited when its first key is at most the last query;
/// along queries (fixed keys) the mirror image.
MaskTileIntervals causalIntervals(ImplicitLocOpBuilder &b, bool alongQueries,
                                  Value fixed0, int64_t extent, int64_t width,
                                  Value numTiles) {
  Value zero = index(b, 0), w = index(b, width);
  Value lastFixed = arith::AddIOp::create(b, fixed0, index(b, extent - 1));
  if (!alongQueries) {
    Value fullEnd = arith::DivUIOp::create(
        b, arith::AddIOp::create(b, fixed0, index(b, 1)), w);
    Value visitEnd = arith::MinUIOp::create(
        b,
        arith::CeilDivUIOp::create(
            b, arith::AddIOp::create(b, lastFixed, index(b, 1)), w),
        numTiles);
    return {zero, zero, arith::MinUIOp::create(b, fullEnd, visitEnd), visitEnd};
  }
  Value fullBegin = arith::MinUIOp::create(
      b, arith::CeilDivUIOp::create(b, lastFixed, w), numTiles);
  Value visitBegin = arith::MinUIOp::create(
      b, arith::DivUIOp::create(b, fixed0, w), fullBegin);
  return {visitBegin, fullBegin, numTiles, numTiles};
}

/// The intersection of two classifications (both masks must keep).
MaskTileIntervals intersect(ImplicitLocOpBuilder &b, MaskTileIntervals x,
                            MaskTileIntervals y) {
  Value visitBegin = arith::MaxUIOp::create(b, x.visitBegin, y.visitBegin);
  Value visitEnd = arith::MaxUIOp::create(
      b, visitBegin, arith::MinUIOp::create(b, x.visitEnd, y.visitEnd));
  Value fullBegin = arith::MaxUIOp::create(b, x.fullBegin, y.fullBegin);
  Value fullEnd = arith::MinUIOp::create(b, x.fullEnd, y.fullEnd);
  return {visitBegin, fullBegin, fullEnd, visitEnd};
}

/// The full tiles also end before the last, cut tile of the sequence
/// (`length / width` tiles are whole), and the ranges are ordered:
/// visitBegin <= fullBegin <= fullEnd <= visitEnd.
MaskTileIntervals boundToLength(ImplicitLocOpBuilder &b, MaskTileIntervals t,
                                Value length, int64_t width) {
  Value whole = arith::DivUIOp::create(b, length, index(b, width));
  Value fullEnd = arith::MinUIOp::create(
      b, arith::MinUIOp::create(b, t.fullEnd, whole), t.visitEnd);
  Value fullBegin = arith::MaxUIOp::create(
      b, arith::MinUIOp::create(b, t.fullBegin, fullEnd), t.visitBegin);
  fullEnd = arith::MaxUIOp::create(b, fullEnd, fullBegin);
  return {t.visitBegin, fullBegin, fullEnd, t.visitEnd};
}

/// A copy of `loop` over [lower, upper) after `previous` (whose results it
/// continues), its mask kept or (full tiles) dropped, tagged `kind`.
scf::ForOp cloneRange(ImplicitLocOpBuilder &b, scf::ForOp loop,
                      scf::ForOp previous, Value lower, Value upper,
                      bool dropMask, StringRef kind) {
  auto range = cast<scf::ForOp>(b.clone(*loop));
  range.setLowerBound(lower);
  range.setUpperBound(upper);
  if (previous)
    range.getInitArgsMutable().assign(previous.getResults());
  if (dropMask) {
    // The loop's one mask (a region mask stays: full tiles skip it by a
    // branch, see maskPartialTilesOnly).
    auto mask = *range.getBody()->getOps<ApplyMaskOp>().begin();
    mask.replaceAllUsesWith(mask.getScores());
    mask.erase();
  }
  range->removeAttr(kKvLoopAttr);
  range->setAttr(kKvTilesAttr, b.getStringAttr(kind));
  return range;
}

/// Checks what splitting `loop` at tile bounds needs: tiles from 0 with step
/// 1, the mask's column offset `iv * width` (`column` names that offset in
/// the error), and `invariants` defined outside the loop (`invariantsWhy`
/// names them). Returns the tile width; errors name `pass`.
FailureOr<int64_t> checkTileLoop(scf::ForOp loop, Value col,
                                 ValueRange invariants, StringRef column,
                                 StringRef invariantsWhat, StringRef pass) {
  auto fail = [&](const Twine &why) {
    return emitPassError(loop, pass) << why, failure();
  };
  if (!matchPattern(loop.getLowerBound(), m_Zero()) ||
      !matchPattern(loop.getStep(), m_One()))
    return fail("expects a loop over tiles from 0 with step 1");
  std::optional<int64_t> width = tileWidth(loop, col);
  if (!width)
    return fail("expects the mask's " + column + " to be iv * tile width");
  for (Value v : invariants)
    if (loop->isAncestor(v.getParentRegion()->getParentOp()))
      return fail("expects the mask's " + invariantsWhat +
                  " to be loop-invariant");
  return *width;
}

/// Applies `mask` (in `loop`, whose induction variable is the tile index)
/// only where the tile is outside [fullBegin, fullEnd): a branch uniform
/// across the block, which full tiles skip.
void maskPartialTilesOnly(ImplicitLocOpBuilder &b, scf::ForOp loop,
                          MaskTileOp mask, Value fullBegin, Value fullEnd) {
  b.setInsertionPoint(mask);
  Value tile = loop.getInductionVar();
  Value partial = arith::OrIOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, tile, fullBegin),
      arith::CmpIOp::create(b, arith::CmpIPredicate::uge, tile, fullEnd));
  auto ifPartial =
      scf::IfOp::create(b, TypeRange{mask.getType()}, partial,
                        /*addThenBlock=*/true, /*addElseBlock=*/true);
  mask.getResult().replaceAllUsesWith(ifPartial.getResult(0));
  mask->moveBefore(ifPartial.thenBlock(), ifPartial.thenBlock()->end());
  OpBuilder thenBuilder = OpBuilder::atBlockEnd(ifPartial.thenBlock());
  scf::YieldOp::create(thenBuilder, mask.getLoc(), mask.getResult());
  OpBuilder elseBuilder = OpBuilder::atBlockEnd(ifPartial.elseBlock());
  scf::YieldOp::create(elseBuilder, mask.getLoc(), mask.getScores());
}

/// Restricts a loop whose tiles a mask region masks to the tiles the region
/// keeps something of, and evaluates the region only on the partial ones:
/// one loop over [visitBegin, visitEnd) whose tiles in [fullBegin, fullEnd)
/// skip the mask by a uniform branch. (Three loops, partial / full / partial,
/// cost the dK/dV kernel registers: at D=128 with 128x32 tiles ptxas spilled
/// 124 bytes with three, 36 with two, on an H100 build of sm_90a.) Along
/// keys (the forward, dQ) or, for a transposed mask, along queries (dK/dV).
LogicalResult splitRegionLoop(scf::ForOp loop, MaskTileOp mask,
                              StringRef pass) {
  SmallVector<Value> invariants = {mask.getRow(), mask.getKvLen(),
                                   mask.getBatch(), mask.getHead()};
  llvm::append_range(invariants, mask.getCaptures());
  FailureOr<int64_t> width =
      checkTileLoop(loop, mask.getCol(), invariants, "column offset",
                    "rows, bounds and captures", pass);
  if (failed(width))
    return failure();

  ImplicitLocOpBuilder b(loop.getLoc(), loop);
  bool alongQueries = mask.getTransposed();
  int64_t extent = mask.getScores().getType().getDimSize(0);
  Value numTiles = loop.getUpperBound();
  MaskTileIntervals tiles = buildMaskTileIntervals(
      b, mask.getMask(), alongQueries ? MaskLoopDim::QIdx : MaskLoopDim::KvIdx,
      mask.getRow(), extent, *width, numTiles, mask.getBatch(), mask.getHead(),
      mask.getCaptures(), mask.getSortedDocumentIds());
  if (mask.getCausal())
    tiles = intersect(b, tiles,
                      causalIntervals(b, alongQueries, mask.getRow(), extent,
                                      *width, numTiles));
  tiles = boundToLength(b, tiles, mask.getKvLen(), *width);

  scf::ForOp visited = cloneRange(b, loop, {}, tiles.visitBegin, tiles.visitEnd,
                                  false, "visited");
  maskPartialTilesOnly(b, visited,
                       *visited.getBody()->getOps<MaskTileOp>().begin(),
                       tiles.fullBegin, tiles.fullEnd);
  loop.replaceAllUsesWith(visited.getResults());
  loop.erase();
  return success();
}

/// Splits `loop` at its tile bounds; errors name `pass`.
LogicalResult splitLoop(scf::ForOp loop, StringRef pass) {
  auto regionMasks = llvm::to_vector(loop.getBody()->getOps<MaskTileOp>());
  if (regionMasks.size() > 1)
    return emitPassError(loop, pass) << "expects one mask per loop";
  if (regionMasks.size() == 1)
    return splitRegionLoop(loop, regionMasks.front(), pass);
  auto masks = llvm::to_vector(loop.getBody()->getOps<ApplyMaskOp>());
  if (masks.empty())
    return success();
  auto fail = [&](const Twine &why) {
    return emitPassError(loop, pass) << why;
  };
  if (masks.size() != 1)
    return fail("expects one mask per key/value loop");
  ApplyMaskOp mask = masks.front();
  FailureOr<int64_t> blockN =
      checkTileLoop(loop, mask.getCol(), {mask.getRow(), mask.getKvLen()},
                    "key offset", "query row and key length", pass);
  if (failed(blockN))
    return failure();

  ImplicitLocOpBuilder b(loop.getLoc(), loop);
  TileBounds bounds = classifyTiles(b, loop, mask, *blockN);
  scf::ForOp fullLoop = cloneRange(b, loop, {}, loop.getLowerBound(),
                                   bounds.numFull, true, "full");
  scf::ForOp partialLoop = cloneRange(b, loop, fullLoop, bounds.numFull,
                                      bounds.numVisited, false, "partial");

  loop.replaceAllUsesWith(partialLoop.getResults());
  loop.erase();
  return success();
}

struct FAEliminateCausalTilesPass
    : public mlir::fa::impl::FAEliminateCausalTilesBase<
          FAEliminateCausalTilesPass> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation()->walk([&](scf::ForOp loop) {
      if (loop->hasAttr(kKvLoopAttr))
        loops.push_back(loop);
    });
    for (scf::ForOp loop : loops)
      if (failed(splitLoop(loop, getArgument())))
        return signalPassFailure();
  }
};
} // namespace
