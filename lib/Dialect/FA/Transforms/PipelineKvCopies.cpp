//===- PipelineKvCopies.cpp - Overlap tile copies with compute ------------===//
//
// A synchronous fa.stage_tile stalls every warp on global memory twice per
// key tile. Started ahead as asynchronous copies, the tiles load while the
// tensor cores work on earlier ones. With one buffer per tile (num_stages =
// 1) V loads during the scores and the next K during P @ V; with two
// (num_stages = 2) both tiles of the next iteration load during the whole of
// this one, and one wait per key tile is left. See Passes.td for the shapes.
//
// The backward's loops (marked fa.copy_loop) read their two tiles anywhere
// in the body (Q in the scores and in dK += dS^T Q), so a tile cannot be
// refilled before the iteration ends: they only take the double-buffered
// form.
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

/// The synchronous copies of one loop, K's then V's (in the backward's dK/dV
/// loop, Q's then dO's).
struct LoopCopies {
  StageTileOp key, value;
};

FailureOr<LoopCopies> findCopies(scf::ForOp loop) {
  auto stages = llvm::to_vector(loop.getBody()->getOps<StageTileOp>());
  auto fail = [&](const Twine &why) {
    return loop.emitError() << "fa-pipeline-kv-copies: " << why;
  };
  if (stages.size() != 2)
    return fail("expects two tile copies (key and value) in the loop body");
  for (StageTileOp stage : stages)
    for (Value v : std::initializer_list<Value>{stage.getSource(), stage.getBatch(), stage.getHead(),
                    stage.getDest()})
      if (!isLoopInvariant(loop, v))
        return fail("expects copies whose source slice and buffer are "
                    "loop-invariant");
  if (stages[0].getDest() == stages[1].getDest())
    return fail("expects the key and value copies to use different buffers");
  return LoopCopies{stages[0], stages[1]};
}

/// Starts, asynchronously, the copy `like` did synchronously, of the tile of
/// iteration `iv`, into `dest`.
void copyAhead(ImplicitLocOpBuilder &b, scf::ForOp loop, StageTileOp like,
               Value iv, Value dest) {
  CopyTileAsyncOp::create(b, like.getSource(), like.getBatch(), like.getHead(),
                          recomputeForIv(b, loop, like.getRow(), iv), dest);
}

/// `if (iv + step < ub) { body(iv + step) }` at the builder's position.
void ifNextIteration(ImplicitLocOpBuilder &b, scf::ForOp loop,
                     function_ref<void(Value)> body) {
  Value next = arith::AddIOp::create(b, loop.getInductionVar(), loop.getStep());
  Value hasNext = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, next,
                                        loop.getUpperBound());
  auto ifNext = scf::IfOp::create(b, hasNext, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifNext.thenBlock());
  body(next);
}

/// One buffer per tile, copies one step ahead.
void pipelineSingleBuffered(scf::ForOp loop, LoopCopies copies) {
  Value keyTile = copies.key.getDest(), valueTile = copies.value.getDest();
  // Prologue: the first key tile.
  ImplicitLocOpBuilder b(loop.getLoc(), loop);
  copyAhead(b, loop, copies.key, loop.getLowerBound(), keyTile);

  // Where K's copy was: wait for K[j], then fetch V[j].
  b.setInsertionPoint(copies.key);
  WaitTilesOp::create(b);
  copyAhead(b, loop, copies.value, loop.getInductionVar(), valueTile);

  // Where V's copy was: wait for V[j], then fetch K[j+1] if there is one.
  b.setInsertionPoint(copies.value);
  WaitTilesOp::create(b);
  ifNextIteration(b, loop, [&](Value next) {
    copyAhead(b, loop, copies.key, next, keyTile);
  });
}

/// Slot `j % stages` of a multi-buffered shared tile `[stages][R][C]`, as an
/// `R x C` tile.
Value slotOf(ImplicitLocOpBuilder &b, Value staged, Value j) {
  auto type = cast<MemRefType>(staged.getType());
  Value slot = arith::RemUIOp::create(
      b, j, arith::ConstantIndexOp::create(b, type.getDimSize(0)));
  SmallVector<OpFoldResult> offsets = {slot, b.getIndexAttr(0),
                                       b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1),
                                     b.getIndexAttr(type.getDimSize(1)),
                                     b.getIndexAttr(type.getDimSize(2))};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  MemRefType slotType = memref::SubViewOp::inferRankReducedResultType(
      {type.getDimSize(1), type.getDimSize(2)}, type, offsets, sizes, strides);
  return memref::SubViewOp::create(b, slotType, staged, offsets, sizes,
                                   strides);
}

/// Two slots per tile (`keyStaged`, `valueStaged`: `[2][R][C]`): iteration j
/// computes on slot j % 2 while K[j+1] and V[j+1] land in the other one.
void pipelineDoubleBuffered(scf::ForOp loop, LoopCopies copies, Value keyStaged,
                            Value valueStaged) {
  ImplicitLocOpBuilder b(loop.getLoc(), loop);
  // Prologue: both tiles of the first iteration.
  Value lb = loop.getLowerBound();
  copyAhead(b, loop, copies.key, lb, slotOf(b, keyStaged, lb));
  copyAhead(b, loop, copies.value, lb, slotOf(b, valueStaged, lb));

  // Top of the body: K[j] and V[j] landed and, by the wait's barrier, every
  // warp is done with iteration j - 1, whose slot the next copies overwrite.
  b.setInsertionPointToStart(loop.getBody());
  WaitTilesOp::create(b);
  ifNextIteration(b, loop, [&](Value next) {
    copyAhead(b, loop, copies.key, next, slotOf(b, keyStaged, next));
    copyAhead(b, loop, copies.value, next, slotOf(b, valueStaged, next));
  });
  // The body's readers take this iteration's slot.
  for (Value staged : std::initializer_list<Value>{keyStaged, valueStaged}) {
    Value slot = slotOf(b, staged, loop.getInductionVar());
    staged.replaceUsesWithIf(slot, [&](OpOperand &use) {
      Operation *user = use.getOwner();
      return isa<TileMatmulOp>(user) && loop->isAncestor(user);
    });
  }
}

/// Gives a shared tile (a workgroup attribution of the kernel) `stages`
/// slots: `[R][C]` becomes `[stages][R][C]`; its users go through slotOf.
void multiBuffer(Value tile, int64_t stages) {
  auto type = cast<MemRefType>(tile.getType());
  tile.setType(MemRefType::get(
      {stages, type.getDimSize(0), type.getDimSize(1)}, type.getElementType(),
      MemRefLayoutAttrInterface{}, type.getMemorySpace()));
}

/// A copy made once before the key loops (the query tile, with q_in_shared)
/// becomes asynchronous: it lands with the first K/V tiles, under the first
/// wait of the loop that reads it, instead of stalling the block on its own.
/// Only key loops read it, and each of their reads follows a wait.
void startQueryCopyEarly(gpu::GPUFuncOp kernel) {
  for (StageTileOp stage : llvm::make_early_inc_range(
           kernel.getBody().front().getOps<StageTileOp>())) {
    ImplicitLocOpBuilder b(stage.getLoc(), stage);
    CopyTileAsyncOp::create(b, stage.getSource(), stage.getBatch(),
                            stage.getHead(), stage.getRow(), stage.getDest());
    stage.erase();
  }
}

LogicalResult pipelineKernel(gpu::GPUFuncOp kernel) {
  if (getTileConfigEntry(kernel, "pipeline_copies", 1) == 0)
    return success();
  int64_t stages = getTileConfigEntry(kernel, "num_stages", 1);
  // Which loops: the forward's online-softmax loops, and with two stages the
  // backward's copy loops (see the file comment).
  auto isPipelined = [&](scf::ForOp loop) {
    if (loop->hasAttr("fa.pipelined"))
      return false;
    if (loop->hasAttr(kCopyLoopAttr))
      return stages >= 2;
    auto phase = loop->getAttrOfType<StringAttr>(kSoftmaxPhaseAttr);
    return phase && phase.getValue() == "online";
  };
  SmallVector<std::pair<scf::ForOp, LoopCopies>> work;
  WalkResult walk = kernel.walk([&](scf::ForOp loop) {
    if (!isPipelined(loop))
      return WalkResult::advance();
    FailureOr<LoopCopies> copies = findCopies(loop);
    if (failed(copies))
      return WalkResult::interrupt();
    work.push_back({loop, *copies});
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  // The loops of a kernel (full and diagonal) share its K and V buffers.
  llvm::SmallDenseSet<Value> multiBuffered;
  for (auto [loop, copies] : work) {
    if (stages == 1) {
      pipelineSingleBuffered(loop, copies);
    } else {
      Value keyTile = copies.key.getDest(), valueTile = copies.value.getDest();
      for (Value tile : std::initializer_list<Value>{keyTile, valueTile})
        if (multiBuffered.insert(tile).second)
          multiBuffer(tile, stages);
      pipelineDoubleBuffered(loop, copies, keyTile, valueTile);
    }
    // Epilogue: the buffers are quiet again for whatever follows.
    ImplicitLocOpBuilder b(loop.getLoc(), loop);
    b.setInsertionPointAfter(loop);
    WaitTilesOp::create(b);
    copies.key.erase();
    copies.value.erase();
    loop->setAttr("fa.pipelined", b.getUnitAttr());
  }
  if (!work.empty())
    startQueryCopyEarly(kernel);
  return success();
}

struct FAPipelineKvCopiesPass
    : public mlir::fa::impl::FAPipelineKvCopiesBase<FAPipelineKvCopiesPass> {
  void runOnOperation() override {
    WalkResult result = getOperation()->walk([&](gpu::GPUFuncOp kernel) {
      return failed(pipelineKernel(kernel)) ? WalkResult::interrupt()
                                            : WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
