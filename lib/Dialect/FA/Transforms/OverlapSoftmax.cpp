//===- OverlapSoftmax.cpp - Softmax of a tile during the last P @ V -------===//
//
// With warpgroup MMAs a product is issued and waited for separately, so the
// warps can work while the tensor cores run one. The online-softmax loop as
// tiled leaves them nothing to do meanwhile: S = Q K[j]^T, its softmax and
// acc += P V[j] each need the one before. This pass (FlashAttention-3's
// intra-warpgroup pipelining) moves each tile's P @ V into the next
// iteration, issued right after that iteration's scores, so that it runs
// while the warps exponentiate them:
//
//   prologue (lb < ub):    copy K[lb]; wait; copy K[lb+1], V[lb]
//                          S = Q K[lb]^T; softmax -> m, l, acc * alpha, P
//   loop j in [lb+1, ub):  wait; copy K[j+1] (if any), V[j]
//                          issue S = Q K[j]^T; issue acc += P V[j-1]
//                          softmax of S (waits for S); acc * alpha (for acc)
//   epilogue (lb < ub):    wait; acc += P V[ub-1]
//
// which is the tiled loop's arithmetic in another order: acc enters
// iteration j scaled to the maximum of tile j - 1, receives P[j-1] V[j-1],
// and is rescaled to the maximum of tile j.
//
// In PTX the wait for P @ V follows the whole softmax; ptxas (CUDA 13),
// though, moves it up into the row-max reduction, so today only the maxima
// and the scores' wait overlap P @ V, not the exponentials
// (bench/results/2026-11-25-h100-overlap-sass).
//
// K and V get two slots each (tile j in slot j % 2). Each copy starts one
// iteration before its tile is read; the wait's barrier at the top of an
// iteration frees the slots the copies overwrite: K[j-1]'s (read by the last
// iteration's scores) and V[j-2]'s (read by its P @ V, waited for there
// before the rescale). The loops are marked fa.pipelined, so
// fa-pipeline-kv-copies leaves them.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FA/Transforms/KernelFunctions.h"
#include "fa/Dialect/FA/Transforms/Passes.h"
#include "fa/Dialect/FA/Transforms/TileCopies.h"
#include "fa/Support/PassSupport.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::fa {
#define GEN_PASS_DEF_FAOVERLAPSOFTMAX
#include "fa/Dialect/FA/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {
/// An online-softmax key loop and the ops the rewrite moves.
struct OnlineLoop {
  scf::ForOp loop;
  LoopCopies copies;
  TileMatmulOp scores; // S = Q K[j]^T
  TileMatmulOp values; // acc' = P V[j] + acc * alpha, yielded
  unsigned accIndex;   // the accumulator among the loop's carried values
};

/// `loop`'s online loop, or an error naming `pass` when the rewrite cannot
/// take it.
FailureOr<OnlineLoop> matchOnlineLoop(scf::ForOp loop, StringRef pass) {
  auto fail = [&](const Twine &why) {
    return emitPassError(loop, pass) << why;
  };
  FailureOr<LoopCopies> copies = findLoopCopies(loop, pass);
  if (failed(copies))
    return failure();
  auto products = llvm::to_vector(loop.getBody()->getOps<TileMatmulOp>());
  if (products.size() != 2 || !products[0].getTransposeB() ||
      products[0].getB() != copies->key.getDest() ||
      products[1].getB() != copies->value.getDest())
    return fail("expects two products in the loop body: the scores with the "
                "key tile, then P @ V with the value tile");
  if (!isa<VectorType>(products[1].getA().getType()))
    return fail("expects P in registers (a vector), to carry it to the next "
                "iteration");
  OnlineLoop online{loop, *copies, products[0], products[1], 0};
  Value result = online.values.getResult();
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  if (!result.hasOneUse() || result.getUses().begin()->getOwner() != yield)
    return fail("expects P @ V's result to be used only as the carried "
                "accumulator");
  online.accIndex = result.getUses().begin()->getOperandNumber();
  // The accumulator is read (rescaled) only after the scores were issued:
  // the rewrite issues the deferred P @ V there.
  Value acc = loop.getRegionIterArg(online.accIndex);
  for (Operation *user : acc.getUsers()) {
    Operation *inBody = loop.getBody()->findAncestorOpInBlock(*user);
    if (!inBody || !online.scores->isBeforeInBlock(inBody))
      return fail("expects the accumulator to be read only after the scores");
  }
  return online;
}

/// Clones `loop`'s body (without the copies, P @ V and the terminator) at
/// the builder, through `mapping`; `afterScores` runs once the scores are.
/// Returns the values to carry: the loop's yielded ones, the accumulator
/// being P @ V's input (P @ V is still to come), then P.
SmallVector<Value> cloneBodyWithoutValues(ImplicitLocOpBuilder &b,
                                          OnlineLoop online, IRMapping &mapping,
                                          function_ref<void()> afterScores) {
  for (Operation &op : online.loop.getBody()->without_terminator()) {
    if (&op == online.copies.key || &op == online.copies.value ||
        &op == online.values)
      continue;
    b.clone(op, mapping);
    if (&op == online.scores)
      afterScores();
  }
  auto yield = cast<scf::YieldOp>(online.loop.getBody()->getTerminator());
  SmallVector<Value> carried;
  for (auto [i, value] : llvm::enumerate(yield.getOperands()))
    carried.push_back(mapping.lookupOrDefault(
        i == online.accIndex ? online.values.getAcc() : value));
  carried.push_back(mapping.lookupOrDefault(online.values.getA()));
  return carried;
}

/// One loop's rewrite (see the file comment), with its K and V buffers,
/// which already have two slots.
struct OverlapBuilder {
  OnlineLoop online;
  Value keyStaged, valueStaged;
  Value lb, ub, step;

  OverlapBuilder(OnlineLoop online, Value keyStaged, Value valueStaged)
      : online(online), keyStaged(keyStaged), valueStaged(valueStaged),
        lb(online.loop.getLowerBound()), ub(online.loop.getUpperBound()),
        step(online.loop.getStep()) {}

  /// Starts the copy of tile `j` of K or V (`like`, the loop's copy of it)
  /// into slot j % 2 of `staged`.
  void copyAhead(ImplicitLocOpBuilder &b, StageTileOp like, Value staged,
                 Value j) {
    copyTileAhead(b, online.loop, like, j, tileSlot(b, staged, j));
  }

  /// The start of iteration `j` (of the prologue's for lb): once K[j] has
  /// landed, the copies of K[j + 1] (if any) and V[j] start. Returns the
  /// mapping of the loop's body onto iteration j: the induction variable,
  /// the carried values (`carried`) and K's slot.
  IRMapping startIteration(ImplicitLocOpBuilder &b, Value j,
                           ValueRange carried) {
    WaitTilesOp::create(b);
    ifNextIteration(b, j, step, ub, [&](Value next) {
      copyAhead(b, online.copies.key, keyStaged, next);
    });
    copyAhead(b, online.copies.value, valueStaged, j);
    IRMapping mapping;
    mapping.map(online.loop.getInductionVar(), j);
    mapping.map(online.loop.getRegionIterArgs(), carried);
    mapping.map(keyStaged, tileSlot(b, keyStaged, j));
    return mapping;
  }

  /// Tile lb up to its probabilities when the loop has tiles; the loop's
  /// initial values and a zero P otherwise.
  scf::IfOp buildPrologue(ImplicitLocOpBuilder &b, Value hasTiles) {
    scf::ForOp loop = online.loop;
    Type probabilities = online.values.getA().getType();
    SmallVector<Type> carriedTypes(loop.getResultTypes());
    carriedTypes.push_back(probabilities);
    auto prologue = scf::IfOp::create(b, carriedTypes, hasTiles,
                                      /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(prologue.thenBlock());
    copyAhead(b, online.copies.key, keyStaged, lb);
    IRMapping mapping = startIteration(b, lb, loop.getInitArgs());
    scf::YieldOp::create(b, cloneBodyWithoutValues(b, online, mapping, [] {}));

    b.setInsertionPointToStart(prologue.elseBlock());
    SmallVector<Value> untouched(loop.getInitArgs());
    untouched.push_back(arith::ConstantOp::create(
        b, cast<TypedAttr>(b.getZeroAttr(probabilities))));
    scf::YieldOp::create(b, untouched);
    return prologue;
  }

  /// The loop over the other tiles, from the prologue's values: P @ V of the
  /// previous tile issued after this one's scores.
  scf::ForOp buildOverlappedLoop(ImplicitLocOpBuilder &b, ValueRange initial) {
    scf::ForOp loop = online.loop;
    Value first = arith::AddIOp::create(b, lb, step);
    auto overlapped = scf::ForOp::create(b, first, ub, step, initial);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(overlapped.getBody());
    Value j = overlapped.getInductionVar();
    auto carried = overlapped.getRegionIterArgs();
    IRMapping mapping = startIteration(b, j, carried.drop_back());
    auto issuePreviousValues = [&] {
      Value previous = arith::SubIOp::create(b, j, step);
      Value acc = TileMatmulOp::create(
          b, online.values.getType(), carried.back(),
          tileSlot(b, valueStaged, previous), carried[online.accIndex]);
      mapping.map(loop.getRegionIterArg(online.accIndex), acc);
    };
    scf::YieldOp::create(
        b, cloneBodyWithoutValues(b, online, mapping, issuePreviousValues));
    overlapped->setDiscardableAttrs(loop->getDiscardableAttrDictionary());
    overlapped->setAttr(kPipelinedAttr, b.getUnitAttr());
    return overlapped;
  }

  /// P @ V of the last tile when the loop has tiles: the accumulator.
  Value buildEpilogue(ImplicitLocOpBuilder &b, Value hasTiles,
                      scf::ForOp overlapped) {
    Value acc = overlapped.getResult(online.accIndex);
    auto epilogue = scf::IfOp::create(b, acc.getType(), hasTiles,
                                      /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(epilogue.thenBlock());
    WaitTilesOp::create(b);
    Value last = arith::SubIOp::create(b, ub, step);
    scf::YieldOp::create(
        b, ValueRange{TileMatmulOp::create(
               b, online.values.getType(), overlapped.getResults().back(),
               tileSlot(b, valueStaged, last), acc)});
    b.setInsertionPointToStart(epilogue.elseBlock());
    scf::YieldOp::create(b, acc);
    return epilogue.getResult(0);
  }

  /// Replaces the loop by the prologue, the overlapped loop and the
  /// epilogue.
  void rewrite() {
    scf::ForOp loop = online.loop;
    ImplicitLocOpBuilder b(loop.getLoc(), loop);
    Value hasTiles =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, lb, ub);
    scf::IfOp prologue = buildPrologue(b, hasTiles);
    scf::ForOp overlapped = buildOverlappedLoop(b, prologue.getResults());
    SmallVector<Value> results(overlapped.getResults().drop_back());
    results[online.accIndex] = buildEpilogue(b, hasTiles, overlapped);
    loop.replaceAllUsesWith(results);
    loop.erase();
  }
};

/// Rewrites the online loops of `kernel`; errors name `pass`.
LogicalResult overlapKernel(gpu::GPUFuncOp kernel, StringRef pass) {
  TileAttr config = getTileConfig(kernel);
  if (!config.getOverlapSoftmax())
    return success();
  // fa-tile-attention checks the same; this is for IR made otherwise.
  if (failed(checkOverlapSoftmaxConfig(kernel, pass, config.getWgmma(),
                                       config.getStageCount(),
                                       config.getPipelineCopies())))
    return failure();
  auto isOnlineLoop = [](scf::ForOp loop) {
    return getSoftmaxPhase(loop) == SoftmaxPhase::Online;
  };
  return rewriteCopyLoops<OnlineLoop>(
      kernel, isOnlineLoop,
      [&](scf::ForOp loop) { return matchOnlineLoop(loop, pass); },
      [](OnlineLoop &online) {
        Value keyTile = online.copies.key.getDest(),
              valueTile = online.copies.value.getDest();
        for (Value tile : {keyTile, valueTile})
          multiBufferTile(tile, /*stages=*/2);
        OverlapBuilder(online, keyTile, valueTile).rewrite();
      });
}

struct FAOverlapSoftmaxPass
    : public mlir::fa::impl::FAOverlapSoftmaxBase<FAOverlapSoftmaxPass> {
  void runOnOperation() override {
    if (failed(forEachKernel(getOperation(), [&](gpu::GPUFuncOp kernel) {
          return overlapKernel(kernel, getArgument());
        })))
      signalPassFailure();
  }
};
} // namespace
