//===- PipelineKvCopies.cpp - Overlap tile copies with compute ------------===//
//
// A synchronous fa.stage_tile stalls every warp on global memory twice per
// key tile. Started one step ahead as asynchronous copies, the V tile loads
// while the scores are computed and the next K tile while P @ V runs, and
// two waits per key tile replace four barriers. See Passes.td for the shape.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FA/Transforms/Passes.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::fa {
#define GEN_PASS_DEF_FAPIPELINEKVCOPIES
#include "fa/Dialect/FA/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {
/// `value` as computed in `loop`'s body, but for induction value `iv`:
/// clones the ops between the induction variable and `value`.
Value recomputeForIv(OpBuilder &b, scf::ForOp loop, Value value, Value iv) {
  if (value == loop.getInductionVar())
    return iv;
  Operation *def = value.getDefiningOp();
  if (!def || !loop->isAncestor(def))
    return value; // Loop-invariant.
  IRMapping mapping;
  for (Value operand : def->getOperands())
    mapping.map(operand, recomputeForIv(b, loop, operand, iv));
  return b.clone(*def, mapping)->getResult(cast<OpResult>(value).getResultNumber());
}

bool isLoopInvariant(scf::ForOp loop, Value value) {
  return !loop->isAncestor(value.getParentRegion()->getParentOp());
}

LogicalResult pipelineLoop(scf::ForOp loop) {
  auto stages = llvm::to_vector(loop.getBody()->getOps<StageTileOp>());
  auto fail = [&](const Twine &why) {
    return loop.emitError() << "fa-pipeline-kv-copies: " << why;
  };
  if (stages.size() != 2)
    return fail("expects the key copy and the value copy in the loop body");
  StageTileOp keyStage = stages[0], valueStage = stages[1];
  for (StageTileOp stage : stages)
    for (Value v : std::initializer_list<Value>{stage.getSource(), stage.getBatch(), stage.getHead(),
                    stage.getDest()})
      if (!isLoopInvariant(loop, v))
        return fail("expects copies whose source slice and buffer are "
                    "loop-invariant");
  if (keyStage.getDest() == valueStage.getDest())
    return fail("expects the key and value copies to use different buffers");

  auto copy = [](ImplicitLocOpBuilder &b, StageTileOp like, Value row) {
    CopyTileAsyncOp::create(b, like.getSource(), like.getBatch(),
                            like.getHead(), row, like.getDest());
  };

  // Prologue: the first key tile.
  ImplicitLocOpBuilder b(loop.getLoc(), loop);
  copy(b, keyStage,
       recomputeForIv(b, loop, keyStage.getRow(), loop.getLowerBound()));

  // Where K's copy was: wait for K[j], then fetch V[j].
  b.setInsertionPoint(keyStage);
  Value iv = loop.getInductionVar();
  WaitTilesOp::create(b);
  copy(b, valueStage, recomputeForIv(b, loop, valueStage.getRow(), iv));

  // Where V's copy was: wait for V[j], then fetch K[j+1] if there is one.
  b.setInsertionPoint(valueStage);
  WaitTilesOp::create(b);
  Value next = arith::AddIOp::create(b, iv, loop.getStep());
  Value hasNext = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, next,
                                        loop.getUpperBound());
  auto ifNext = scf::IfOp::create(b, hasNext, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifNext.thenBlock());
    copy(b, keyStage, recomputeForIv(b, loop, keyStage.getRow(), next));
  }

  // Epilogue: the buffers are quiet again for whatever follows.
  b.setInsertionPointAfter(loop);
  WaitTilesOp::create(b);

  keyStage.erase();
  valueStage.erase();
  loop->setAttr("fa.pipelined", b.getUnitAttr());
  return success();
}

/// Whether the kernel's tile configuration (fa.tile, as recorded by
/// fa-tile-attention) leaves copy pipelining on; it is on by default.
bool pipeliningEnabled(scf::ForOp loop) {
  auto kernel = loop->getParentOfType<gpu::GPUFuncOp>();
  auto config =
      kernel ? kernel->getAttrOfType<DictionaryAttr>(kTileConfigAttr) : nullptr;
  auto enabled = config ? config.getAs<IntegerAttr>("pipeline_copies")
                        : IntegerAttr();
  return !enabled || enabled.getInt() != 0;
}

struct FAPipelineKvCopiesPass
    : public mlir::fa::impl::FAPipelineKvCopiesBase<FAPipelineKvCopiesPass> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation()->walk([&](scf::ForOp loop) {
      auto phase = loop->getAttrOfType<StringAttr>(kSoftmaxPhaseAttr);
      if (phase && phase.getValue() == "online" &&
          !loop->hasAttr("fa.pipelined") && pipeliningEnabled(loop))
        loops.push_back(loop);
    });
    for (scf::ForOp loop : loops)
      if (failed(pipelineLoop(loop)))
        return signalPassFailure();
  }
};
} // namespace
