//===- FuseOnlineSoftmax.cpp - Three softmax phases into one loop ---------===//
//
// The tiled kernel sweeps the keys three times: for the row maximum m, for
// the row sum l = sum exp(s - m), and for acc = sum exp(s - m) @ v. This pass
// replaces the three sweeps by one that keeps running values: when a tile
// raises the maximum from m to m', the sum and accumulator so far are scaled
// by exp(m - m'). Scores are computed once per tile instead of three times.
//
// The scale moves out of the scores: the loop carries the maximum of the
// raw products q.k (the same row as the scaled maximum, since scale > 0) and
// exponentiates exp2(q.k * c - m * c) with c = scale * log2(e), one fused
// multiply-add per score where scaling first would cost a multiply and a
// subtraction. Users of the old maximum (the log-sum-exp) receive m * scale.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FA/Transforms/Passes.h"
#include "fa/Support/Builders.h"
#include "fa/Support/PassSupport.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Matchers.h"

#include <limits>

namespace mlir::fa {
#define GEN_PASS_DEF_FAFUSEONLINESOFTMAX
#include "fa/Dialect/FA/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {
/// The three loops of the safe softmax and the ops of interest inside them.
struct SoftmaxPhases {
  scf::ForOp maxLoop, sumLoop, accLoop;
  vector::MultiDimReductionOp maxReduction;
  /// The scores' scale, which the fused loop folds into its exponent; null
  /// when a score region sits between (its scores are already scaled).
  arith::MulFOp scoreScale;
  TileMatmulOp valueMatmul;
  /// The probabilities exp(s - m) of the accumulate loop, which the value
  /// matmul takes through what follows them there (dropout, the truncation
  /// to the operand type), ops the fused loop keeps.
  Value probabilities;
};

/// The single op of type `OpTy` in `loop`'s body matching `pred`, or null.
template <typename OpTy>
OpTy findUnique(scf::ForOp loop, function_ref<bool(OpTy)> pred) {
  OpTy found;
  for (auto op : loop.getBody()->getOps<OpTy>())
    if (pred(op)) {
      if (found)
        return nullptr;
      found = op;
    }
  return found;
}

/// The phases of `func`, failure without them; errors name `pass`.
FailureOr<SoftmaxPhases> matchPhases(gpu::GPUFuncOp func, StringRef pass) {
  SoftmaxPhases phases;
  WalkResult walk = func.walk([&](scf::ForOp loop) {
    std::optional<SoftmaxPhase> phase = getSoftmaxPhase(loop);
    if (!phase || *phase == SoftmaxPhase::Online)
      return WalkResult::advance();
    scf::ForOp *slot = *phase == SoftmaxPhase::Max   ? &phases.maxLoop
                       : *phase == SoftmaxPhase::Sum ? &phases.sumLoop
                                                     : &phases.accLoop;
    if (*slot) {
      emitPassError(loop, pass)
          << "more than one '" << stringifySoftmaxPhase(*phase)
          << "' loop (run it before fa-eliminate-causal-tiles)";
      return WalkResult::interrupt();
    }
    *slot = loop;
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (!phases.maxLoop && !phases.sumLoop && !phases.accLoop)
    return failure(); // Nothing to fuse; not an error.

  auto fail = [&](const Twine &what) {
    emitPassError(func, pass) << what;
    return failure();
  };
  if (!phases.maxLoop || !phases.sumLoop || !phases.accLoop)
    return fail("expects the max, sum and accumulate loops together");
  // The fused loop carries each phase's one value (row maxima, row sums,
  // accumulator) in its place; other loops would lose theirs.
  for (scf::ForOp loop : {phases.maxLoop, phases.sumLoop, phases.accLoop})
    if (loop.getNumRegionIterArgs() != 1)
      return fail(Twine("expects the '") +
                  stringifySoftmaxPhase(*getSoftmaxPhase(loop)) +
                  "' loop to carry one value, not " +
                  Twine(loop.getNumRegionIterArgs()));

  Value maxCarried = phases.maxLoop.getRegionIterArgs().front();
  phases.maxReduction = findUnique<vector::MultiDimReductionOp>(
      phases.maxLoop,
      [&](vector::MultiDimReductionOp r) { return r.getAcc() == maxCarried; });
  if (!phases.maxReduction)
    return fail("no row-maximum reduction in the max loop");

  // The score scale is the multiplication by a constant feeding the mask.
  // A score region sees scaled scores: the scale stays, and the exponent
  // takes log2(e) alone.
  Value scores = phases.maxReduction.getSource();
  if (auto mask = scores.getDefiningOp<ApplyMaskOp>())
    scores = mask.getScores();
  else if (auto maskTile = scores.getDefiningOp<MaskTileOp>())
    scores = maskTile.getScores();
  if (!scores.getDefiningOp<ScoreTileOp>()) {
    auto scale = scores.getDefiningOp<arith::MulFOp>();
    if (!scale || !matchPattern(scale.getRhs(), m_Constant()))
      return fail("expects scores scaled by a constant before the mask");
    phases.scoreScale = scale;
  }

  Value accCarried = phases.accLoop.getRegionIterArgs().front();
  phases.valueMatmul = findUnique<TileMatmulOp>(
      phases.accLoop, [&](TileMatmulOp m) { return m.getAcc() == accCarried; });
  if (!phases.valueMatmul)
    return fail("no probability-times-value matmul in the accumulate loop");
  Value operand = phases.valueMatmul.getA();
  while (Operation *def = operand.getDefiningOp()) {
    if (auto truncate = dyn_cast<arith::TruncFOp>(def))
      operand = truncate.getIn();
    else if (auto dropout = dyn_cast<ApplyDropoutOp>(def))
      operand = dropout.getProbs();
    else
      break;
  }
  phases.probabilities = operand;
  if (!operand.getDefiningOp<math::ExpOp>() ||
      operand.getDefiningOp()->getBlock() != phases.accLoop.getBody())
    return fail("expects the matmul operand to be the probabilities "
                "exp(s - m) computed in the loop (then dropped out or "
                "truncated)");
  return phases;
}

/// Ops of the accumulate loop that recompute the probabilities (the scores,
/// their key-tile copy and the exponential), which the fused loop has already.
llvm::SetVector<Operation *> probabilityOps(SoftmaxPhases &phases) {
  Block *body = phases.accLoop.getBody();
  BackwardSliceOptions options;
  options.filter = [&](Operation *op) { return op->getBlock() == body; };
  llvm::SetVector<Operation *> slice;
  Operation *producer = phases.probabilities.getDefiningOp();
  (void)getBackwardSlice(producer, &slice, options);
  slice.insert(producer);
  // Copies into shared tiles that the sliced matmuls read.
  for (auto stage : body->getOps<StageTileOp>())
    for (Operation *op : slice)
      if (auto matmul = dyn_cast<TileMatmulOp>(op);
          matmul && matmul.getB() == stage.getDest())
        slice.insert(stage);
  return slice;
}

/// The fast-math flags of the loop's exponentials: `afn` (fa-fast-exp2 makes
/// each one ex2.approx.ftz.f32, one MUFU.EX2) in warpgroup-MMA kernels, where
/// it measured 4-5% faster on the H100
/// (bench/results/2026-11-27-h100-exp2-ftz). The mma.sync kernels keep
/// libdevice's precise form: several of their 4-warp tiles sit at ptxas's
/// 255-register ceiling, and the shorter sequence lets ptxas keep more
/// exponentials in flight and spill.
arith::FastMathFlagsAttr exponentialFlags(gpu::GPUFuncOp kernel) {
  return arith::FastMathFlagsAttr::get(kernel.getContext(),
                                       getTileConfig(kernel).getWgmma()
                                           ? arith::FastMathFlags::afn
                                           : arith::FastMathFlags::none);
}

void fuse(SoftmaxPhases &phases, arith::FastMathFlagsAttr exponentials) {
  scf::ForOp maxLoop = phases.maxLoop, accLoop = phases.accLoop;
  ImplicitLocOpBuilder b(maxLoop.getLoc(), accLoop);
  Value rowMaxInit = maxLoop.getInitArgs().front();
  Value rowSumInit = phases.sumLoop.getInitArgs().front();
  Value accInit = accLoop.getInitArgs().front();
  auto rowsType = cast<VectorType>(rowMaxInit.getType());
  auto scoresType = cast<VectorType>(phases.maxReduction.getSource().getType());
  Type accType = accInit.getType();

  // Exponents in base 2: c = scale * log2(e).
  double scale = 1.0;
  if (phases.scoreScale) {
    auto scaleConst = cast<DenseElementsAttr>(
        cast<arith::ConstantOp>(phases.scoreScale.getRhs().getDefiningOp())
            .getValue());
    scale = scaleConst.getSplatValue<APFloat>().convertToDouble();
  }
  Value scaleLog2 = splatConstant(b, scoresType, scale * M_LOG2E);
  Value scaleLog2Rows = splatConstant(b, rowsType, scale * M_LOG2E);
  Value negInf =
      splatConstant(b, rowsType, -std::numeric_limits<double>::infinity());
  Value zeroRows = splatConstant(b, rowsType, 0.0);

  llvm::SetVector<Operation *> skipped = probabilityOps(phases);
  auto fused = scf::ForOp::create(
      b, maxLoop.getLowerBound(), maxLoop.getUpperBound(), maxLoop.getStep(),
      ValueRange{rowMaxInit, rowSumInit, accInit},
      [&](OpBuilder &nested, Location loc, Value iv, ValueRange carried) {
        ImplicitLocOpBuilder nb(loc, nested);
        Value maxOld = carried[0], sumOld = carried[1], accOld = carried[2];

        // Raw scores q.k of this tile (masked), as the max loop computes
        // them but without the scale.
        IRMapping scoreMap;
        scoreMap.map(maxLoop.getInductionVar(), iv);
        for (Operation &op : maxLoop.getBody()->without_terminator()) {
          if (&op == phases.maxReduction.getOperation())
            continue;
          if (phases.scoreScale && &op == phases.scoreScale.getOperation()) {
            scoreMap.map(phases.scoreScale.getResult(),
                         scoreMap.lookupOrDefault(phases.scoreScale.getLhs()));
            continue;
          }
          nb.clone(op, scoreMap);
        }
        Value scores = scoreMap.lookup(phases.maxReduction.getSource());

        Value maxNew = vector::MultiDimReductionOp::create(
            nb, scores, maxOld, ArrayRef<bool>{false, true},
            vector::CombiningKind::MAXNUMF);
        // A row with every key so far masked keeps m = -inf; subtract 0 then
        // so that exp2(-inf - -inf) does not produce NaN.
        Value allMasked = arith::CmpFOp::create(nb, arith::CmpFPredicate::OEQ,
                                                maxNew, negInf);
        Value maxSafe =
            arith::SelectOp::create(nb, allMasked, zeroRows, maxNew);
        Value rescale = math::Exp2Op::create(
            nb,
            arith::MulFOp::create(
                nb, arith::SubFOp::create(nb, maxOld, maxSafe), scaleLog2Rows),
            exponentials);
        Value negScaledMax = arith::NegFOp::create(
            nb, arith::MulFOp::create(nb, maxSafe, scaleLog2Rows));
        Value probabilities = math::Exp2Op::create(
            nb,
            math::FmaOp::create(
                nb, scores, scaleLog2,
                RowBroadcastOp::create(nb, scores.getType(), negScaledMax)),
            exponentials);
        Value sumNew = vector::MultiDimReductionOp::create(
            nb, probabilities, arith::MulFOp::create(nb, sumOld, rescale),
            ArrayRef<bool>{false, true}, vector::CombiningKind::ADD);
        Value accRescaled = arith::MulFOp::create(
            nb, accOld, RowBroadcastOp::create(nb, accType, rescale));

        // The value half of the accumulate loop, on these probabilities.
        IRMapping valueMap;
        valueMap.map(accLoop.getInductionVar(), iv);
        valueMap.map(accLoop.getRegionIterArgs().front(), accRescaled);
        valueMap.map(phases.probabilities, probabilities);
        for (Operation &op : accLoop.getBody()->without_terminator())
          if (!skipped.contains(&op))
            nb.clone(op, valueMap);
        scf::YieldOp::create(
            nb, ValueRange{maxNew, sumNew,
                           valueMap.lookup(phases.valueMatmul.getResult())});
      });
  fused->setAttr(kKvLoopAttr, b.getUnitAttr());
  fused->setAttr(kSoftmaxPhaseAttr,
                 SoftmaxPhaseAttr::get(b.getContext(), SoftmaxPhase::Online));

  b.setInsertionPointAfter(fused);
  Value naturalMax = arith::MulFOp::create(b, fused.getResult(0),
                                           splatConstant(b, rowsType, scale));
  accLoop.getResult(0).replaceAllUsesWith(fused.getResult(2));
  phases.sumLoop.getResult(0).replaceAllUsesWith(fused.getResult(1));
  accLoop.erase();
  phases.sumLoop.erase();
  maxLoop.getResult(0).replaceAllUsesWith(naturalMax);
  maxLoop.erase();
}

struct FAFuseOnlineSoftmaxPass
    : public mlir::fa::impl::FAFuseOnlineSoftmaxBase<FAFuseOnlineSoftmaxPass> {
  void runOnOperation() override {
    if (failed(forEachKernel(getOperation(), [&](gpu::GPUFuncOp func) {
          return fuseFunction(func);
        })))
      signalPassFailure();
  }

  LogicalResult fuseFunction(gpu::GPUFuncOp func) {
    bool hasPhases = false;
    func.walk([&](scf::ForOp loop) {
      std::optional<SoftmaxPhase> phase = getSoftmaxPhase(loop);
      hasPhases |= phase && *phase != SoftmaxPhase::Online;
    });
    if (!hasPhases)
      return success();
    FailureOr<SoftmaxPhases> phases = matchPhases(func, getArgument());
    if (failed(phases))
      return failure();
    fuse(*phases, exponentialFlags(func));
    return success();
  }
};
} // namespace
