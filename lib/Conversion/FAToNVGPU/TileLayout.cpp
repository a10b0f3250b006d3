//===- TileLayout.cpp - A lane's share of a tile --------------------------===//
//
// See TileLayout.h for the distribution these helpers implement.
//
//===----------------------------------------------------------------------===//

#include "TileLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::fa {

TileTypeConverter::TileTypeConverter(int64_t blockRows, int64_t rowBlocks) {
  addConversion([](Type type) { return type; });
  addConversion([=](VectorType type) -> Type {
    if (type.getRank() == 2 && type.getDimSize(0) == blockRows &&
        type.getDimSize(1) % kColsPerBlock == 0)
      return VectorType::get(
          {rowBlocks * type.getDimSize(1) / kColsPerBlock, kValuesPerBlock},
          type.getElementType());
    if (type.getRank() == 1 && type.getDimSize(0) == blockRows)
      return VectorType::get({2 * rowBlocks}, type.getElementType());
    return type;
  });
}

int64_t rowBlocksOf(Type share, int64_t cols) {
  return cast<VectorType>(share).getDimSize(0) / (cols / kColsPerBlock);
}

int64_t rowBlocksOfRows(Type share) {
  return cast<VectorType>(share).getDimSize(0) / 2;
}

Lane laneOf(ImplicitLocOpBuilder &b, int64_t rowBlocks) {
  Lane lane;
  lane.threadId = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  lane.laneId =
      arith::RemUIOp::create(b, lane.threadId, index(b, kThreadsPerWarp));
  Value warp =
      arith::DivUIOp::create(b, lane.threadId, index(b, kThreadsPerWarp));
  Value quad = arith::RemUIOp::create(b, lane.laneId, index(b, 4));
  lane.warpRow0 =
      arith::MulIOp::create(b, warp, index(b, rowBlocks * kMmaRows));
  lane.rowInTile = arith::AddIOp::create(
      b, lane.warpRow0, arith::DivUIOp::create(b, lane.laneId, index(b, 4)));
  lane.pairColumn = arith::MulIOp::create(b, quad, index(b, 2));
  lane.isFirstOfRow =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, quad, index(b, 0));
  return lane;
}

Value laneRow(ImplicitLocOpBuilder &b, const Lane &lane, Value row0, int64_t m,
              int64_t h) {
  return arith::AddIOp::create(b,
                               arith::AddIOp::create(b, row0, lane.rowInTile),
                               index(b, kMmaRows * m + 8 * h));
}

int64_t chunkElems(Type type) {
  return kChunkBytes * 8 / type.getIntOrFloatBitWidth();
}

llvm::Align naturalAlignment(VectorType type) {
  return llvm::Align(type.getNumElements() *
                     type.getElementType().getIntOrFloatBitWidth() / 8);
}

Value alignedLoad(ImplicitLocOpBuilder &b, VectorType type, Value base,
                  ValueRange indices) {
  return vector::LoadOp::create(b, type, base, indices, /*nontemporal=*/false,
                                naturalAlignment(type));
}

void alignedStore(ImplicitLocOpBuilder &b, Value value, Value base,
                  ValueRange indices) {
  vector::StoreOp::create(b, value, base, indices, /*nontemporal=*/false,
                          naturalAlignment(cast<VectorType>(value.getType())));
}

int64_t swizzleRunChunks(MemRefType tile) {
  constexpr int64_t kLongRunBytes = 8 * kChunkBytes;
  constexpr int64_t kShortRunBytes = 4 * kChunkBytes;
  int64_t rowBytes = tile.getDimSize(1) * tile.getElementTypeBitWidth() / 8;
  if (rowBytes % kLongRunBytes != 0 && rowBytes % kShortRunBytes == 0)
    return 4;
  return 8;
}

Value swizzlePhase(ImplicitLocOpBuilder &b, Value row, int64_t runChunks) {
  if (runChunks == kSwizzleRows)
    return arith::RemUIOp::create(b, row, index(b, kSwizzleRows));
  Value rowPair =
      arith::DivUIOp::create(b, row, index(b, kSwizzleRows / runChunks));
  return arith::RemUIOp::create(b, rowPair, index(b, runChunks));
}

Value swizzledColumn(ImplicitLocOpBuilder &b, Value row, Value chunk,
                     MemRefType tile) {
  Value phase = swizzlePhase(b, row, swizzleRunChunks(tile));
  return arith::MulIOp::create(b, arith::XOrIOp::create(b, chunk, phase),
                               index(b, chunkElems(tile.getElementType())));
}

std::pair<Value, Value>
splitSwizzledAddress(ImplicitLocOpBuilder &b, Value rowLane, int64_t rowConst,
                     Value chunkLane, int64_t chunkConst, MemRefType tile) {
  assert(rowConst % kSwizzleRows == 0 && (!chunkLane || chunkConst % 2 == 0) &&
         "constant parts must not disturb the swizzle phase");
  int64_t run = swizzleRunChunks(tile);
  Value phase = swizzlePhase(b, rowLane, run);
  Value lanePhase =
      chunkLane ? arith::XOrIOp::create(b, chunkLane, phase) : phase;
  Value lowChunk =
      arith::XOrIOp::create(b, lanePhase, index(b, chunkConst % run));
  Value chunk = arith::AddIOp::create(b, lowChunk,
                                      index(b, chunkConst - chunkConst % run));
  return {arith::AddIOp::create(b, rowLane, index(b, rowConst)),
          arith::MulIOp::create(b, chunk,
                                index(b, chunkElems(tile.getElementType())))};
}

Value swizzledElementColumn(ImplicitLocOpBuilder &b, Value row, Value col,
                            MemRefType tile) {
  Value perChunk = index(b, chunkElems(tile.getElementType()));
  return arith::AddIOp::create(
      b, swizzledColumn(b, row, arith::DivUIOp::create(b, col, perChunk), tile),
      arith::RemUIOp::create(b, col, perChunk));
}

Value loadRowSegment(ImplicitLocOpBuilder &b, Value buffer, Value batch,
                     Value head, Value row, Value col, int64_t width) {
  auto type = cast<MemRefType>(buffer.getType());
  auto segmentType = VectorType::get({width}, type.getElementType());
  Value seq = memref::DimOp::create(b, buffer, 2);
  Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, seq);
  Value lastRow = arith::SubIOp::create(b, seq, index(b, 1));
  Value safeRow = arith::MinUIOp::create(b, row, lastRow);
  Value segment = alignedLoad(b, segmentType, buffer,
                              ValueRange{batch, head, safeRow, col});
  return arith::SelectOp::create(b, valid, segment,
                                 splatConstant(b, segmentType, 0.0));
}

} // namespace mlir::fa
