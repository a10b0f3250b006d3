//===- TileCopies.h - Pieces of the tile copy pipelines ---------*- C++ -*-===//
//
// fa-pipeline-kv-copies and fa-overlap-softmax both turn the synchronous
// tile copies of a key loop (fa.stage_tile) into asynchronous ones started
// ahead (fa.copy_tile_async) into multi-buffered shared tiles. These are the
// pieces they share, and the walk they both are (rewriteCopyLoops).
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FA_TRANSFORMS_TILECOPIES_H
#define FA_DIALECT_FA_TRANSFORMS_TILECOPIES_H

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FA/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::fa {

/// The synchronous copies of one loop, K's then V's (in the backward's dK/dV
/// loop, Q's then dO's), and the per-row statistics staged with them (the
/// dK/dV loop's lse and delta of its queries; none elsewhere).
struct LoopCopies {
  scf::ForOp loop;
  StageTileOp key, value;
  SmallVector<StageRowsOp> rows;
};

/// The loop's two tile copies and its row copies, whose source slices and
/// buffers must be loop-invariant; otherwise an error naming `passName` on
/// the loop.
FailureOr<LoopCopies> findLoopCopies(scf::ForOp loop, StringRef passName);

/// Starts, asynchronously, the copy `like` (in `loop`) did synchronously,
/// of the tile of iteration `iv`, into `dest`.
void copyTileAhead(ImplicitLocOpBuilder &b, scf::ForOp loop, StageTileOp like,
                   Value iv, Value dest);

/// The same for a copy of per-row statistics.
void copyRowsAhead(ImplicitLocOpBuilder &b, scf::ForOp loop, StageRowsOp like,
                   Value iv, Value dest);

/// `if (iv + step < ub) { body(iv + step) }` at the builder's position.
void ifNextIteration(ImplicitLocOpBuilder &b, Value iv, Value step, Value ub,
                     function_ref<void(Value next)> body);

/// Gives a shared tile (a workgroup attribution of the kernel) `stages`
/// slots: `[R][C]` becomes `[stages][R][C]`; its users must go through
/// tileSlot. A tile that has them already (the loops of a kernel share its
/// K and V tiles) is left as it is.
void multiBufferTile(Value tile, int64_t stages);

/// The same for a shared buffer of per-row statistics: `[R]` becomes
/// `[stages][R]`.
void multiBufferRows(Value rows, int64_t stages);

/// Slot `j % stages` of a multi-buffered shared buffer `[stages][...]`: an
/// `R x C` tile, or `R` rows' statistics.
Value tileSlot(ImplicitLocOpBuilder &b, Value staged, Value j);

/// A copy made once before the key loops (the query tile, with q_in_shared)
/// becomes asynchronous: it lands with the first K/V tiles, under the first
/// wait of the loop that reads it, instead of stalling the block on its own.
/// Only key loops read it, and each of their reads follows a wait.
void startQueryCopyEarly(gpu::GPUFuncOp kernel);

/// Rewrites the loops of `kernel` that `select` accepts and no pass marked
/// fa.pipelined yet: first matches each with `match` (a failed match has
/// reported, and then nothing is rewritten), then calls `rewrite` on each
/// match. Once any loop was rewritten, the query copy starts early
/// (startQueryCopyEarly).
template <typename Match>
LogicalResult rewriteCopyLoops(gpu::GPUFuncOp kernel,
                               function_ref<bool(scf::ForOp)> select,
                               function_ref<FailureOr<Match>(scf::ForOp)> match,
                               function_ref<void(Match &)> rewrite) {
  SmallVector<Match> work;
  WalkResult walk = kernel.walk([&](scf::ForOp loop) {
    if (loop->hasAttr(kPipelinedAttr) || !select(loop))
      return WalkResult::advance();
    FailureOr<Match> matched = match(loop);
    if (failed(matched))
      return WalkResult::interrupt();
    work.push_back(*matched);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  for (Match &matched : work)
    rewrite(matched);
  if (!work.empty())
    startQueryCopyEarly(kernel);
  return success();
}

} // namespace mlir::fa

#endif // FA_DIALECT_FA_TRANSFORMS_TILECOPIES_H
