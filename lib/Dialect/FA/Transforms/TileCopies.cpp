//===- TileCopies.cpp - Building blocks of the tile copy pipelines --------===//

#include "fa/Dialect/FA/Transforms/TileCopies.h"
#include "fa/Support/Builders.h"
#include "fa/Support/PassSupport.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;

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
  return b.clone(*def, mapping)
      ->getResult(cast<OpResult>(value).getResultNumber());
}

bool isLoopInvariant(scf::ForOp loop, Value value) {
  return !loop->isAncestor(value.getParentRegion()->getParentOp());
}

/// Whether `copy` (a fa.stage_tile or fa.stage_rows) reads a loop-invariant
/// slice into a loop-invariant buffer.
template <typename StageOp>
bool copiesInvariantSlice(scf::ForOp loop, StageOp copy) {
  return llvm::all_of(ValueRange{copy.getSource(), copy.getBatch(),
                                 copy.getHead(), copy.getDest()},
                      [&](Value v) { return isLoopInvariant(loop, v); });
}

/// Gives shared buffer `buffer` of rank `rank` `stages` slots in front:
/// `[...]` becomes `[stages][...]`; one of rank `rank` + 1 (shared by
/// several loops of the kernel) has them already.
void addSlots(Value buffer, int64_t rank, int64_t stages) {
  auto type = cast<MemRefType>(buffer.getType());
  if (type.getRank() == rank + 1) {
    assert(type.getDimSize(0) == stages && "buffer has other slots already");
    return;
  }
  SmallVector<int64_t> shape = {stages};
  llvm::append_range(shape, type.getShape());
  buffer.setType(MemRefType::get(shape, type.getElementType(),
                                 MemRefLayoutAttrInterface{},
                                 type.getMemorySpace()));
}
} // namespace

FailureOr<fa::LoopCopies> mlir::fa::findLoopCopies(scf::ForOp loop,
                                                   StringRef passName) {
  auto stages = llvm::to_vector(loop.getBody()->getOps<StageTileOp>());
  auto fail = [&](const Twine &why) {
    return emitPassError(loop, passName) << why;
  };
  if (stages.size() != 2)
    return fail("expects two tile copies (key and value) in the loop body");
  auto rows = llvm::to_vector(loop.getBody()->getOps<StageRowsOp>());
  if (!llvm::all_of(
          stages,
          [&](StageTileOp s) { return copiesInvariantSlice(loop, s); }) ||
      !llvm::all_of(
          rows, [&](StageRowsOp s) { return copiesInvariantSlice(loop, s); }))
    return fail("expects copies whose source slice and buffer are "
                "loop-invariant");
  if (stages[0].getDest() == stages[1].getDest())
    return fail("expects the key and value copies to use different buffers");
  return LoopCopies{loop, stages[0], stages[1], std::move(rows)};
}

void mlir::fa::copyTileAhead(ImplicitLocOpBuilder &b, scf::ForOp loop,
                             StageTileOp like, Value iv, Value dest) {
  CopyTileAsyncOp::create(b, like.getSource(), like.getBatch(), like.getHead(),
                          recomputeForIv(b, loop, like.getRow(), iv), dest);
}

void mlir::fa::copyRowsAhead(ImplicitLocOpBuilder &b, scf::ForOp loop,
                             StageRowsOp like, Value iv, Value dest) {
  CopyRowsAsyncOp::create(b, like.getSource(), like.getBatch(), like.getHead(),
                          recomputeForIv(b, loop, like.getRow(), iv), dest);
}

void mlir::fa::ifNextIteration(ImplicitLocOpBuilder &b, Value iv, Value step,
                               Value ub, function_ref<void(Value next)> body) {
  Value next = arith::AddIOp::create(b, iv, step);
  Value hasNext = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, next, ub);
  auto ifNext = scf::IfOp::create(b, hasNext, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifNext.thenBlock());
  body(next);
}

void mlir::fa::multiBufferTile(Value tile, int64_t stages) {
  addSlots(tile, /*rank=*/2, stages);
}

void mlir::fa::multiBufferRows(Value rows, int64_t stages) {
  addSlots(rows, /*rank=*/1, stages);
}

Value mlir::fa::tileSlot(ImplicitLocOpBuilder &b, Value staged, Value j) {
  auto type = cast<MemRefType>(staged.getType());
  ArrayRef<int64_t> slotShape = type.getShape().drop_front();
  Value slot = arith::RemUIOp::create(b, j, index(b, type.getDimSize(0)));
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  offsets[0] = slot;
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1)};
  for (int64_t size : slotShape)
    sizes.push_back(b.getIndexAttr(size));
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  MemRefType slotType = memref::SubViewOp::inferRankReducedResultType(
      slotShape, type, offsets, sizes, strides);
  return memref::SubViewOp::create(b, slotType, staged, offsets, sizes,
                                   strides);
}

void mlir::fa::startQueryCopyEarly(gpu::GPUFuncOp kernel) {
  for (StageTileOp stage : llvm::make_early_inc_range(
           kernel.getBody().front().getOps<StageTileOp>())) {
    ImplicitLocOpBuilder b(stage.getLoc(), stage);
    CopyTileAsyncOp::create(b, stage.getSource(), stage.getBatch(),
                            stage.getHead(), stage.getRow(), stage.getDest());
    stage.erase();
  }
}
