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
// form. The dK/dV loop also stages its queries' lse and delta
// (fa.stage_rows): they travel with the tiles, two slots each, so that the
// loop reads them from shared memory instead of stalling on global loads.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FA/Transforms/Passes.h"
#include "fa/Dialect/FA/Transforms/TileCopies.h"
#include "fa/Support/PassSupport.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::fa {
#define GEN_PASS_DEF_FAPIPELINEKVCOPIES
#include "fa/Dialect/FA/Transforms/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {
/// One buffer per tile, copies one step ahead.
void pipelineSingleBuffered(LoopCopies copies) {
  scf::ForOp loop = copies.loop;
  Value keyTile = copies.key.getDest(), valueTile = copies.value.getDest();
  // Prologue: the first key tile.
  ImplicitLocOpBuilder b(loop.getLoc(), loop);
  copyTileAhead(b, loop, copies.key, loop.getLowerBound(), keyTile);

  // Where K's copy was: wait for K[j], then fetch V[j].
  b.setInsertionPoint(copies.key);
  WaitTilesOp::create(b);
  copyTileAhead(b, loop, copies.value, loop.getInductionVar(), valueTile);

  // Where V's copy was: wait for V[j], then fetch K[j+1] if there is one.
  b.setInsertionPoint(copies.value);
  WaitTilesOp::create(b);
  ifNextIteration(
      b, loop.getInductionVar(), loop.getStep(), loop.getUpperBound(),
      [&](Value next) { copyTileAhead(b, loop, copies.key, next, keyTile); });
}

/// Two slots per tile (`keyStaged`, `valueStaged`: `[2][R][C]`) and per row
/// copy (its dest: `[2][R]`): iteration j computes on slot j % 2 while K[j+1],
/// V[j+1] and the rows of j + 1 land in the other one.
void pipelineDoubleBuffered(LoopCopies copies, Value keyStaged,
                            Value valueStaged) {
  scf::ForOp loop = copies.loop;
  ImplicitLocOpBuilder b(loop.getLoc(), loop);
  auto copyAhead = [&](Value j) {
    copyTileAhead(b, loop, copies.key, j, tileSlot(b, keyStaged, j));
    copyTileAhead(b, loop, copies.value, j, tileSlot(b, valueStaged, j));
    for (StageRowsOp rows : copies.rows)
      copyRowsAhead(b, loop, rows, j, tileSlot(b, rows.getDest(), j));
  };
  // Prologue: the copies of the first iteration.
  copyAhead(loop.getLowerBound());

  // Top of the body: K[j] and V[j] landed and, by the wait's barrier, every
  // warp is done with iteration j - 1, whose slot the next copies overwrite.
  b.setInsertionPointToStart(loop.getBody());
  WaitTilesOp::create(b);
  ifNextIteration(b, loop.getInductionVar(), loop.getStep(),
                  loop.getUpperBound(), copyAhead);
  // The body's readers take this iteration's slot: the tiles' products and
  // the rows' broadcasts.
  auto readSlot = [&](Value staged, function_ref<bool(Operation *)> isReader) {
    Value slot = tileSlot(b, staged, loop.getInductionVar());
    staged.replaceUsesWithIf(slot, [&](OpOperand &use) {
      Operation *user = use.getOwner();
      return isReader(user) && loop->isAncestor(user);
    });
  };
  for (Value staged : std::initializer_list<Value>{keyStaged, valueStaged})
    readSlot(staged, [](Operation *op) { return isa<TileMatmulOp>(op); });
  for (StageRowsOp rows : copies.rows)
    readSlot(rows.getDest(),
             [](Operation *op) { return isa<ColumnBroadcastSharedOp>(op); });
}

/// Pipelines `copies`' loop with `stages` buffers per tile.
void pipelineLoop(LoopCopies &copies, int64_t stages) {
  scf::ForOp loop = copies.loop;
  if (stages == 1) {
    pipelineSingleBuffered(copies);
  } else {
    Value keyTile = copies.key.getDest(), valueTile = copies.value.getDest();
    for (Value tile : std::initializer_list<Value>{keyTile, valueTile})
      multiBufferTile(tile, stages);
    for (StageRowsOp rows : copies.rows)
      multiBufferRows(rows.getDest(), stages);
    pipelineDoubleBuffered(copies, keyTile, valueTile);
  }
  // Epilogue: the buffers are quiet again for whatever follows.
  ImplicitLocOpBuilder b(loop.getLoc(), loop);
  b.setInsertionPointAfter(loop);
  WaitTilesOp::create(b);
  copies.key.erase();
  copies.value.erase();
  for (StageRowsOp rows : copies.rows)
    rows.erase();
  loop->setAttr(kPipelinedAttr, b.getUnitAttr());
}

/// Pipelines the copy loops of `kernel`; errors name `pass`.
LogicalResult pipelineKernel(gpu::GPUFuncOp kernel, StringRef pass) {
  TileAttr config = getTileConfig(kernel);
  if (!config.getPipelineCopies())
    return success();
  int64_t stages = config.getStageCount();
  // Which loops: the forward's online-softmax loops, and with two stages the
  // backward's copy loops (see the file comment).
  auto isPipelined = [&](scf::ForOp loop) {
    if (loop->hasAttr(kCopyLoopAttr))
      return stages >= 2;
    return getSoftmaxPhase(loop) == SoftmaxPhase::Online;
  };
  return rewriteCopyLoops<LoopCopies>(
      kernel, isPipelined,
      [&](scf::ForOp loop) -> FailureOr<LoopCopies> {
        FailureOr<LoopCopies> copies = findLoopCopies(loop, pass);
        // The single-buffered form refills a buffer in the middle of the
        // body; the rows are read all through it.
        if (succeeded(copies) && stages == 1 && !copies->rows.empty())
          return emitPassError(loop, pass)
                 << "expects no row copies (fa.stage_rows) with one stage";
        return copies;
      },
      [&](LoopCopies &copies) { pipelineLoop(copies, stages); });
}

struct FAPipelineKvCopiesPass
    : public mlir::fa::impl::FAPipelineKvCopiesBase<FAPipelineKvCopiesPass> {
  void runOnOperation() override {
    if (failed(forEachKernel(getOperation(), [&](gpu::GPUFuncOp kernel) {
          return pipelineKernel(kernel, getArgument());
        })))
      signalPassFailure();
  }
};
} // namespace
