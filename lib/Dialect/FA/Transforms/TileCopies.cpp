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
} // namespace

FailureOr<fa::LoopCopies> mlir::fa::findLoopCopies(scf::ForOp loop,
                                                   StringRef passName) {
  auto stages = llvm::to_vector(loop.getBody()->getOps<StageTileOp>());
  auto fail = [&](const Twine &why) {
    return emitPassError(loop, passName) << why;
  };
  if (stages.size() != 2)
    return fail("expects two tile copies (key and value) in the loop body");
  for (StageTileOp stage : stages)
    for (Value v :
         std::initializer_list<Value>{stage.getSource(), stage.getBatch(),
                                      stage.getHead(), stage.getDest()})
      if (!isLoopInvariant(loop, v))
        return fail("expects copies whose source slice and buffer are "
                    "loop-invariant");
  if (stages[0].getDest() == stages[1].getDest())
    return fail("expects the key and value copies to use different buffers");
  return LoopCopies{loop, stages[0], stages[1]};
}

void mlir::fa::copyTileAhead(ImplicitLocOpBuilder &b, scf::ForOp loop,
                             StageTileOp like, Value iv, Value dest) {
  CopyTileAsyncOp::create(b, like.getSource(), like.getBatch(), like.getHead(),
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
  auto type = cast<MemRefType>(tile.getType());
  if (type.getRank() == 3) {
    assert(type.getDimSize(0) == stages && "tile has other slots already");
    return; // Another loop of the kernel shares the tile.
  }
  tile.setType(MemRefType::get(
      {stages, type.getDimSize(0), type.getDimSize(1)}, type.getElementType(),
      MemRefLayoutAttrInterface{}, type.getMemorySpace()));
}

Value mlir::fa::tileSlot(ImplicitLocOpBuilder &b, Value staged, Value j) {
  auto type = cast<MemRefType>(staged.getType());
  Value slot = arith::RemUIOp::create(b, j, index(b, type.getDimSize(0)));
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

void mlir::fa::startQueryCopyEarly(gpu::GPUFuncOp kernel) {
  for (StageTileOp stage : llvm::make_early_inc_range(
           kernel.getBody().front().getOps<StageTileOp>())) {
    ImplicitLocOpBuilder b(stage.getLoc(), stage);
    CopyTileAsyncOp::create(b, stage.getSource(), stage.getBatch(),
                            stage.getHead(), stage.getRow(), stage.getDest());
    stage.erase();
  }
}
