//===- RowLayout.cpp - A thread's share of a block of rows ----------------===//
//
// See RowLayout.h for the distribution these helpers implement.
//
//===----------------------------------------------------------------------===//

#include "RowLayout.h"

#include "fa/Support/Builders.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::fa {

RowsTypeConverter::RowsTypeConverter(const RowsLayout &layout) {
  addConversion([](Type type) { return type; });
  addConversion([=](VectorType type) -> Type {
    bool isBlock =
        type.getRank() == 2 &&
        type.getShape() == ArrayRef<int64_t>{layout.rows, layout.cols};
    bool isColumns = type.getRank() == 1 && type.getDimSize(0) == layout.cols;
    if (isBlock || isColumns)
      return VectorType::get({layout.valuesPerThread()}, type.getElementType());
    if (type.getRank() == 1 && type.getDimSize(0) == layout.rows)
      return type.getElementType();
    return type;
  });
}

bool isPerRow(Type type, const RowsLayout &layout) {
  auto vector = dyn_cast<VectorType>(type);
  return vector && vector.getRank() == 1 && vector.getDimSize(0) == layout.rows;
}

RowThread rowThreadOf(ImplicitLocOpBuilder &b, const RowsLayout &layout) {
  RowThread t;
  t.threadId = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  t.laneId = arith::RemUIOp::create(b, t.threadId, index(b, kThreadsPerWarp));
  t.warpId = arith::DivUIOp::create(b, t.threadId, index(b, kThreadsPerWarp));
  Value perRow = index(b, layout.threadsPerRow());
  t.rowInBlock = arith::DivUIOp::create(b, t.threadId, perRow);
  t.threadInRow = arith::RemUIOp::create(b, t.threadId, perRow);
  t.firstColumn = arith::MulIOp::create(b, t.threadInRow, index(b, kRowChunk));
  return t;
}

Value threadRow(ImplicitLocOpBuilder &b, const RowThread &t, Value row0) {
  return arith::AddIOp::create(b, row0, t.rowInBlock);
}

Value loadRowValue(ImplicitLocOpBuilder &b, const RowThread &t, Value source,
                   Value row0) {
  Value row = threadRow(b, t, row0);
  Value rows = memref::DimOp::create(b, source, 0);
  Value last = arith::SubIOp::create(b, rows, index(b, 1));
  Value value = memref::LoadOp::create(
      b, source, ValueRange{arith::MinUIOp::create(b, row, last)});
  Value inside = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, rows);
  Value zero = arith::ConstantOp::create(b, b.getZeroAttr(value.getType()));
  return arith::SelectOp::create(b, inside, value, zero);
}

void storeRowValue(ImplicitLocOpBuilder &b, const RowThread &t, Value value,
                   Value dest, Value row0) {
  Value row = threadRow(b, t, row0);
  Value writes = arith::AndIOp::create(
      b,
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, t.threadInRow,
                            index(b, 0)),
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row,
                            memref::DimOp::create(b, dest, 0)));
  scf::IfOp::create(b, writes, [&](OpBuilder &nested, Location loc) {
    memref::StoreOp::create(nested, loc, value, dest, ValueRange{row});
    scf::YieldOp::create(nested, loc);
  });
}

Value chunkColumn(ImplicitLocOpBuilder &b, const RowsLayout &layout,
                  const RowThread &t, int64_t k) {
  return arith::AddIOp::create(
      b, t.firstColumn, index(b, k * layout.threadsPerRow() * kRowChunk));
}

VectorType chunkType(Type element) {
  return VectorType::get({kRowChunk}, element);
}

llvm::Align chunkAlignment(Type element) {
  return llvm::Align(kRowChunk * element.getIntOrFloatBitWidth() / 8);
}

Value ChunkAccess::validColumns(ImplicitLocOpBuilder &b) const {
  auto type = cast<MemRefType>(buffer.getType());
  Value cols = memref::DimOp::create(b, buffer, type.getRank() - 1);
  Value left = arith::SubIOp::create(b, cols, indices.back());
  Value clamped = arith::MinSIOp::create(
      b, arith::MaxSIOp::create(b, left, index(b, 0)), index(b, kRowChunk));
  if (!rowInside)
    return clamped;
  return arith::SelectOp::create(b, rowInside, clamped, index(b, 0));
}

Value ChunkAccess::isWhole(ImplicitLocOpBuilder &b, Value valid) const {
  Value whole = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, valid,
                                      index(b, kRowChunk));
  auto type = cast<MemRefType>(buffer.getType());
  if (type.getRank() == 1)
    return whole;
  // Row starts are chunk-aligned when the row length is a whole number of
  // chunks (buffers themselves are at least 16-byte aligned).
  Value cols = memref::DimOp::create(b, buffer, 1);
  Value aligned = arith::CmpIOp::create(
      b, arith::CmpIPredicate::eq,
      arith::RemUIOp::create(b, cols, index(b, kRowChunk)), index(b, 0));
  return arith::AndIOp::create(b, whole, aligned);
}

Value ChunkAccess::load(ImplicitLocOpBuilder &b) const {
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  VectorType type = chunkType(element);
  Value valid = validColumns(b);
  auto ifOp = scf::IfOp::create(
      b, isWhole(b, valid),
      [&](OpBuilder &nested, Location loc) {
        Value chunk = vector::LoadOp::create(nested, loc, type, buffer, indices,
                                             /*nontemporal=*/false,
                                             chunkAlignment(element));
        scf::YieldOp::create(nested, loc, chunk);
      },
      [&](OpBuilder &nested, Location loc) {
        ImplicitLocOpBuilder nb(loc, nested);
        Value mask = vector::CreateMaskOp::create(
            nb, VectorType::get({kRowChunk}, nb.getI1Type()),
            ValueRange{valid});
        Value chunk = vector::MaskedLoadOp::create(
            nb, type, buffer, indices, mask, splatConstant(nb, type, 0.0));
        scf::YieldOp::create(nb, chunk);
      });
  return ifOp.getResult(0);
}

void ChunkAccess::store(ImplicitLocOpBuilder &b, Value chunk) const {
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  Value valid = validColumns(b);
  scf::IfOp::create(
      b, isWhole(b, valid),
      [&](OpBuilder &nested, Location loc) {
        vector::StoreOp::create(nested, loc, chunk, buffer, indices,
                                /*nontemporal=*/false, chunkAlignment(element));
        scf::YieldOp::create(nested, loc);
      },
      [&](OpBuilder &nested, Location loc) {
        ImplicitLocOpBuilder nb(loc, nested);
        Value mask = vector::CreateMaskOp::create(
            nb, VectorType::get({kRowChunk}, nb.getI1Type()),
            ValueRange{valid});
        vector::MaskedStoreOp::create(nb, buffer, indices, mask, chunk);
        scf::YieldOp::create(nb);
      });
}

SmallVector<ChunkAccess> shareChunks(ImplicitLocOpBuilder &b,
                                     const RowsLayout &layout,
                                     const RowThread &t, Value buffer,
                                     ValueRange indices) {
  auto type = cast<MemRefType>(buffer.getType());
  Value row, rowInside;
  if (type.getRank() == 2) {
    row = threadRow(b, t, indices[0]);
    rowInside = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row,
                                      memref::DimOp::create(b, buffer, 0));
  }
  SmallVector<ChunkAccess> chunks;
  for (int64_t k = 0; k < layout.chunksPerThread(); ++k) {
    Value col =
        arith::AddIOp::create(b, indices.back(), chunkColumn(b, layout, t, k));
    ChunkAccess chunk{buffer, {}, rowInside};
    if (row)
      chunk.indices.push_back(row);
    chunk.indices.push_back(col);
    chunks.push_back(std::move(chunk));
  }
  return chunks;
}

Value extractChunk(ImplicitLocOpBuilder &b, Value share, int64_t k) {
  return vector::ExtractStridedSliceOp::create(b, share, {k * kRowChunk},
                                               {kRowChunk}, {1});
}

Value insertChunk(ImplicitLocOpBuilder &b, Value chunk, Value share,
                  int64_t k) {
  return vector::InsertStridedSliceOp::create(b, chunk, share, {k * kRowChunk},
                                              {1});
}

} // namespace mlir::fa
