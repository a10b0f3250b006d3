//===- FATileOps.cpp - Verifiers of the tile-level fa ops -----------------===//
//
// Tile shapes must fit the tensor-core instruction the lowering uses
// (m16n8k16, with B loaded 16 columns at a time), so every tile dimension
// that feeds a matmul is a multiple of 16.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;
using namespace mlir::fa;

static constexpr int64_t kMmaGranule = 16;

static LogicalResult verifyMultipleOfMmaGranule(Operation *op, StringRef what,
                                                int64_t size) {
  if (size % kMmaGranule != 0)
    return op->emitOpError() << "expects " << what << " (" << size
                             << ") to be a multiple of " << kMmaGranule;
  return success();
}

/// A tile of rows of a `[batch, heads, seq, D]` buffer: same element type,
/// `D` columns, a whole number of 16-row warp slices.
static LogicalResult verifyRowsTile(Operation *op, ShapedType tile,
                                    StringRef tileName, MemRefType buffer) {
  if (tile.getElementType() != buffer.getElementType())
    return op->emitOpError()
           << "expects " << tileName << " element type "
           << tile.getElementType() << " to equal the buffer element type "
           << buffer.getElementType();
  if (tile.getDimSize(1) != buffer.getDimSize(3))
    return op->emitOpError()
           << "expects " << tileName << " to have " << buffer.getDimSize(3)
           << " columns (the buffer's head_dim), got " << tile.getDimSize(1);
  return verifyMultipleOfMmaGranule(op, (tileName + " rows").str(),
                                    tile.getDimSize(0));
}

LogicalResult LoadTileOp::verify() {
  return verifyRowsTile(*this, getResult().getType(), "result",
                        getSource().getType());
}

LogicalResult StageTileOp::verify() {
  MemRefType dest = getDest().getType();
  if (!gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(dest))
    return emitOpError("expects dest in the workgroup (shared) address space");
  return verifyRowsTile(*this, dest, "dest", getSource().getType());
}

LogicalResult CopyTileAsyncOp::verify() {
  MemRefType dest = getDest().getType();
  if (!gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(dest))
    return emitOpError("expects dest in the workgroup (shared) address space");
  return verifyRowsTile(*this, dest, "dest", getSource().getType());
}

/// A buffer of per-row statistics staged for the block to read.
static LogicalResult verifySharedRows(Operation *op, StringRef name,
                                      MemRefType rows) {
  if (!gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(rows))
    return op->emitOpError()
           << "expects " << name << " in the workgroup (shared) address space";
  return success();
}

LogicalResult StageRowsOp::verify() {
  return verifySharedRows(*this, "dest", getDest().getType());
}

LogicalResult CopyRowsAsyncOp::verify() {
  return verifySharedRows(*this, "dest", getDest().getType());
}

LogicalResult ColumnBroadcastSharedOp::verify() {
  MemRefType rows = getRows().getType();
  if (failed(verifySharedRows(*this, "rows", rows)))
    return failure();
  int64_t cols = getResult().getType().getDimSize(1);
  if (rows.getDimSize(0) != cols)
    return emitOpError() << "expects rows to hold one value per result column ("
                         << cols << "), got " << rows.getDimSize(0);
  return success();
}

LogicalResult StoreTileOp::verify() {
  if (Value staging = getStaging()) {
    auto type = cast<MemRefType>(staging.getType());
    if (!gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(type))
      return emitOpError(
          "expects staging in the workgroup (shared) address space");
    if (type.getShape() != getValue().getType().getShape() ||
        type.getElementType() != getValue().getType().getElementType())
      return emitOpError() << "expects staging of the value's shape and "
                              "element type "
                           << getValue().getType() << ", got " << type;
  }
  return verifyRowsTile(*this, getValue().getType(), "value",
                        getDest().getType());
}

LogicalResult StoreTileSharedOp::verify() {
  VectorType tile = getTile().getType();
  MemRefType dest = getDest().getType();
  if (!gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(dest))
    return emitOpError("expects dest in the workgroup (shared) address space");
  if (dest.getElementType() != tile.getElementType())
    return emitOpError() << "expects dest element type "
                         << dest.getElementType()
                         << " to equal the tile element type "
                         << tile.getElementType();
  int64_t rows = tile.getDimSize(0), cols = tile.getDimSize(1);
  SmallVector<int64_t, 2> expected = getTransposed()
                                         ? SmallVector<int64_t, 2>{cols, rows}
                                         : SmallVector<int64_t, 2>{rows, cols};
  if (dest.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "expects dest of shape " << expected[0] << "x"
                         << expected[1]
                         << (getTransposed() ? " (the tile's transpose)"
                                             : " (the tile's)")
                         << ", got " << dest.getDimSize(0) << "x"
                         << dest.getDimSize(1);
  // dest is read by fa.tile_matmul, whose every dimension is a multiple of
  // 16.
  if (failed(verifyMultipleOfMmaGranule(*this, "tile rows", rows)))
    return failure();
  return verifyMultipleOfMmaGranule(*this, "tile columns", cols);
}

Operation *TileMatmulOp::getFirstUseInBlock() {
  Block *block = getOperation()->getBlock();
  Operation *firstUse = nullptr;
  for (Operation *user : getOperation()->getUsers()) {
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    if (inBlock && (!firstUse || inBlock->isBeforeInBlock(firstUse)))
      firstUse = inBlock;
  }
  return firstUse;
}

LogicalResult TileMatmulOp::verify() {
  auto a = cast<ShapedType>(getA().getType());
  VectorType acc = getAcc().getType();
  MemRefType b = getB().getType();
  if (auto aShared = dyn_cast<MemRefType>(a)) {
    if (!gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(aShared))
      return emitOpError("expects a in the workgroup (shared) address space");
  } else if (getTransposeA()) {
    // A register tile is distributed as the accumulator is, by rows: its
    // transpose would need a shuffle between lanes. Staged in shared
    // memory, wgmma reads it transposed (an MN-major A).
    return emitOpError("expects a in shared memory with transpose_a, got a "
                       "register tile");
  }
  if (b.getElementType() != a.getElementType())
    return emitOpError() << "expects b element type " << b.getElementType()
                         << " to equal a element type " << a.getElementType();
  if (!gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(b))
    return emitOpError("expects b in the workgroup (shared) address space");
  // a holds M x K, or K x M with transpose_a.
  bool transposeA = getTransposeA();
  int64_t m = a.getDimSize(transposeA ? 1 : 0);
  int64_t k = a.getDimSize(transposeA ? 0 : 1);
  int64_t bK = getTransposeB() ? b.getDimSize(1) : b.getDimSize(0);
  int64_t n = getTransposeB() ? b.getDimSize(0) : b.getDimSize(1);
  if (bK != k)
    return emitOpError() << "expects the reduction size of b (" << bK
                         << ") to equal the "
                         << (transposeA ? "rows" : "columns") << " of a (" << k
                         << ")";
  if (acc.getDimSize(0) != m || acc.getDimSize(1) != n)
    return emitOpError() << "expects acc of shape " << m << "x" << n << ", got "
                         << acc.getDimSize(0) << "x" << acc.getDimSize(1);
  for (auto [name, size] :
       {std::pair{"M", m}, std::pair{"N", n}, std::pair{"K", k}})
    if (failed(verifyMultipleOfMmaGranule(*this, name, size)))
      return failure();
  return success();
}

LogicalResult RowBroadcastOp::verify() {
  if (getResult().getType().getDimSize(0) !=
      getSource().getType().getDimSize(0))
    return emitOpError() << "expects one source value per result row ("
                         << getResult().getType().getDimSize(0) << "), got "
                         << getSource().getType().getDimSize(0);
  return success();
}

/// A block of a 1-D or 2-D buffer: the same rank and element type, one index
/// per dimension.
static LogicalResult verifyBlockAccess(Operation *op, VectorType block,
                                       MemRefType buffer, size_t numIndices) {
  if (block.getElementType() != buffer.getElementType())
    return op->emitOpError()
           << "expects the block element type " << block.getElementType()
           << " to equal the buffer element type " << buffer.getElementType();
  if (numIndices != static_cast<size_t>(buffer.getRank()))
    return op->emitOpError()
           << "expects " << buffer.getRank()
           << " indices (one per buffer dimension), got " << numIndices;
  if (block.getRank() != buffer.getRank())
    return op->emitOpError()
           << "expects a rank-" << buffer.getRank() << " block for a rank-"
           << buffer.getRank() << " buffer, got " << block;
  return success();
}

LogicalResult LoadBlockOp::verify() {
  return verifyBlockAccess(*this, getResult().getType(), getSource().getType(),
                           getIndices().size());
}

LogicalResult StoreBlockOp::verify() {
  return verifyBlockAccess(*this, getValue().getType(), getDest().getType(),
                           getIndices().size());
}

/// Checks a tile op's copy of a mask or score region: `leading` block
/// arguments then one per capture, ending in an fa.yield of one `yielded`.
static LogicalResult verifyTileRegion(Operation *op, Region &region,
                                      ArrayRef<Type> leading,
                                      ValueRange captures, Type yielded) {
  Block &block = region.front();
  SmallVector<Type> expected(leading);
  llvm::append_range(expected, captures.getTypes());
  if (block.getArgumentTypes() != ArrayRef<Type>(expected))
    return op->emitOpError() << "expects region arguments (" << expected
                             << "), got (" << block.getArgumentTypes() << ")";
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield || yield.getValues().size() != 1 ||
      yield.getValues().front().getType() != yielded)
    return op->emitOpError()
           << "expects the region to end in fa.yield of one " << yielded;
  return success();
}

LogicalResult MaskTileOp::verifyRegions() {
  Type index = IndexType::get(getContext());
  return verifyTileRegion(*this, getMask(), {index, index, index, index},
                          getCaptures(), IntegerType::get(getContext(), 1));
}

LogicalResult ScoreTileOp::verifyRegions() {
  Type index = IndexType::get(getContext());
  Type f32 = Float32Type::get(getContext());
  return verifyTileRegion(*this, getScore(), {f32, index, index, index, index},
                          getCaptures(), f32);
}
