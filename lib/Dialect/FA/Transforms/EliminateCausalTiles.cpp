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

/// The key-tile width: the mask's `col` must be `iv * BN`.
std::optional<int64_t> keyTileWidth(scf::ForOp loop, ApplyMaskOp mask) {
  auto mul = mask.getCol().getDefiningOp<arith::MulIOp>();
  if (!mul)
    return std::nullopt;
  APInt width;
  if (mul.getLhs() == loop.getInductionVar() &&
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

/// Splits `loop` at its tile bounds; errors name `pass`.
LogicalResult splitLoop(scf::ForOp loop, StringRef pass) {
  auto masks = llvm::to_vector(loop.getBody()->getOps<ApplyMaskOp>());
  if (masks.empty())
    return success();
  auto fail = [&](const Twine &why) {
    return emitPassError(loop, pass) << why;
  };
  if (masks.size() != 1)
    return fail("expects one mask per key/value loop");
  ApplyMaskOp mask = masks.front();
  if (!matchPattern(loop.getLowerBound(), m_Zero()) ||
      !matchPattern(loop.getStep(), m_One()))
    return fail("expects a loop over tiles from 0 with step 1");
  std::optional<int64_t> blockN = keyTileWidth(loop, mask);
  if (!blockN)
    return fail("expects the mask's key offset to be iv * tile width");
  for (Value v : {mask.getRow(), mask.getKvLen()})
    if (loop->isAncestor(v.getParentRegion()->getParentOp()))
      return fail("expects the mask's query row and key length to be "
                  "loop-invariant");

  ImplicitLocOpBuilder b(loop.getLoc(), loop);
  TileBounds bounds = classifyTiles(b, loop, mask, *blockN);

  auto fullLoop = cast<scf::ForOp>(b.clone(*loop));
  fullLoop.setUpperBound(bounds.numFull);
  auto fullMask = *fullLoop.getBody()->getOps<ApplyMaskOp>().begin();
  fullMask.replaceAllUsesWith(fullMask.getScores());
  fullMask.erase();
  fullLoop->removeAttr(kKvLoopAttr);
  fullLoop->setAttr("fa.kv_tiles", b.getStringAttr("full"));

  auto partialLoop = cast<scf::ForOp>(b.clone(*loop));
  partialLoop.setLowerBound(bounds.numFull);
  partialLoop.setUpperBound(bounds.numVisited);
  partialLoop.getInitArgsMutable().assign(fullLoop.getResults());
  partialLoop->removeAttr(kKvLoopAttr);
  partialLoop->setAttr("fa.kv_tiles", b.getStringAttr("partial"));

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
