//===- MathOps.cpp - Math on a lane's share of a tile ---------------------===//
//
// Row reductions (shuffles within the four lanes of a row), row
// broadcasts, the online softmax's rescale and the attention mask, all on the
// lane's share of a tile (TileLayout.h).
//
//===----------------------------------------------------------------------===//

#include "../WarpReduce.h"
#include "Patterns.h"
#include "TileLayout.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace mlir::fa;

LogicalResult ConvertRowReduction::matchAndRewrite(
    vector::MultiDimReductionOp op, OpAdaptor adaptor,
    ConversionPatternRewriter &rewriter) const {
  if (op.getSourceVectorType().getRank() != 2 ||
      op.getReductionMask() != ArrayRef<bool>{false, true})
    return rewriter.notifyMatchFailure(op, "only row reductions of tiles");
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  vector::CombiningKind kind = op.getKind();
  Value source = adaptor.getSource();
  int64_t rowBlocks = rowBlocksOfRows(adaptor.getAcc().getType());
  int64_t blocks = cast<VectorType>(source.getType()).getDimSize(0) / rowBlocks;
  auto combine = [&](Value x, Value y) {
    return vector::makeArithReduction(b, b.getLoc(), kind, x, y);
  };
  auto extract = [&](Value vector, int64_t i) -> Value {
    return vector::ExtractOp::create(b, vector, ArrayRef<int64_t>{i});
  };
  SmallVector<Value> rows;
  for (int64_t m = 0; m < rowBlocks; ++m) {
    Value partial = extract(source, m * blocks);
    for (int64_t n = 1; n < blocks; ++n)
      partial = combine(partial, extract(source, m * blocks + n));
    for (int64_t h = 0; h < 2; ++h) {
      Value value =
          combine(extract(partial, 2 * h), extract(partial, 2 * h + 1));
      // The four lanes of the row: lane ids 4r + {0, 1, 2, 3}.
      value = warpXorReduce(b, kind, value, /*xorOffsets=*/{1, 2});
      rows.push_back(combine(value, extract(adaptor.getAcc(), 2 * m + h)));
    }
  }
  rewriter.replaceOpWithNewOp<vector::FromElementsOp>(
      op, getTypeConverter()->convertType(op.getType()), rows);
  return success();
}

LogicalResult ConvertRowBroadcast::matchAndRewrite(
    RowBroadcastOp op, OpAdaptor adaptor,
    ConversionPatternRewriter &rewriter) const {
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  Value rows = adaptor.getSource();
  auto type = cast<VectorType>(getTypeConverter()->convertType(op.getType()));
  int64_t rowBlocks = rowBlocksOfRows(rows.getType());
  int64_t blocks = type.getDimSize(0) / rowBlocks;
  // Entry [m * blocks + n][2h + e] takes row value 2m + h. (Built from
  // scalars: an intermediate flat vector could have the tile's row count
  // and read as an unconverted row vector.)
  SmallVector<Value> rowValues, elements;
  for (int64_t slot = 0; slot < 2 * rowBlocks; ++slot)
    rowValues.push_back(
        vector::ExtractOp::create(b, rows, ArrayRef<int64_t>{slot}));
  for (int64_t m = 0; m < rowBlocks; ++m)
    for (int64_t n = 0; n < blocks; ++n)
      for (int64_t v = 0; v < kValuesPerBlock; ++v)
        elements.push_back(rowValues[2 * m + v / 2]);
  rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, type, elements);
  return success();
}

LogicalResult
ConvertRowScale::matchAndRewrite(arith::MulFOp op, OpAdaptor adaptor,
                                 ConversionPatternRewriter &rewriter) const {
  auto broadcast = op.getRhs().getDefiningOp<RowBroadcastOp>();
  if (!broadcast || !op->getParentOfType<scf::ForOp>())
    return rewriter.notifyMatchFailure(op, "not a row scale in a loop");
  Value rows = rewriter.getRemappedValue(broadcast.getSource());
  Type rowsType =
      getTypeConverter()->convertType(broadcast.getSource().getType());
  if (!rows || rows.getType() != rowsType)
    return rewriter.notifyMatchFailure(op, "row values not converted yet");
  Type tileType = getTypeConverter()->convertType(op.getType());
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  Value ones = splatConstant(b, cast<VectorType>(rowsType), 1.0);
  Value differs =
      arith::CmpFOp::create(b, arith::CmpFPredicate::UNE, rows, ones);
  Value laneDiffers =
      vector::ReductionOp::create(b, vector::CombiningKind::OR, differs);
  Value fullWarp = arith::ConstantIntOp::create(b, b.getI32Type(), -1);
  Value warpDiffers = NVVM::VoteSyncOp::create(
      b, b.getI1Type(), fullWarp, laneDiffers, NVVM::VoteSyncKind::any);
  auto ifOp = scf::IfOp::create(b, tileType, warpDiffers,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    scf::YieldOp::create(b, ValueRange{arith::MulFOp::create(
                                b, adaptor.getLhs(), adaptor.getRhs())});
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, ValueRange{adaptor.getLhs()});
  }
  rewriter.replaceOp(op, ifOp.getResults());
  return success();
}

namespace {
/// Whether no element of the tile is masked (uniform over the block): its
/// columns all before the sequence end and, with a causal mask, the whole
/// tile on the visible side of the diagonal.
Value wholeTileVisible(ImplicitLocOpBuilder &b, ApplyMaskOp op,
                       ApplyMaskOp::Adaptor adaptor) {
  int64_t rows = op.getScores().getType().getDimSize(0);
  int64_t cols = op.getScores().getType().getDimSize(1);
  auto lessEqual = [&](Value lhs, int64_t lhsOffset, Value rhs) -> Value {
    return arith::CmpIOp::create(
        b, arith::CmpIPredicate::ule,
        arith::AddIOp::create(b, lhs, index(b, lhsOffset)), rhs);
  };
  Value visible = lessEqual(adaptor.getCol(), cols, adaptor.getKvLen());
  if (!op.getCausal())
    return visible;
  // Keys after queries are masked: with rows as queries the last column
  // must not pass the first row; with rows as keys (transposed) the last
  // row must not pass the first column.
  Value diagonal =
      op.getTransposed()
          ? lessEqual(adaptor.getRow(), rows - 1, adaptor.getCol())
          : lessEqual(adaptor.getCol(), cols - 1, adaptor.getRow());
  return arith::AndIOp::create(b, visible, diagonal);
}
} // namespace

LogicalResult
ConvertApplyMask::matchAndRewrite(ApplyMaskOp op, OpAdaptor adaptor,
                                  ConversionPatternRewriter &rewriter) const {
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  auto type = cast<VectorType>(adaptor.getScores().getType());
  // A transposed mask sits in the backward's dK/dV loop over query tiles,
  // which masks every tile although most have nothing to mask: a uniform
  // branch skips the per-element compares there. Other masks are left in
  // key loops by fa-eliminate-causal-tiles only on the tiles that need
  // them, where the branch would merely cost registers (its phis took the
  // D=64 128x128 wgmma forward from 128 to 169).
  if (op.getTransposed()) {
    auto ifVisible =
        scf::IfOp::create(b, TypeRange{type}, wholeTileVisible(b, op, adaptor),
                          /*addThenBlock=*/true,
                          /*addElseBlock=*/true);
    b.setInsertionPointToStart(ifVisible.thenBlock());
    scf::YieldOp::create(b, adaptor.getScores());
    b.setInsertionPointToStart(ifVisible.elseBlock());
    rewriter.replaceOp(op, ifVisible.getResults());
  }
  int64_t rowBlocks = rowBlocksOf(type, op.getScores().getType().getDimSize(1));
  int64_t blocks = type.getDimSize(0) / rowBlocks;
  Type i32 = b.getI32Type();
  auto offsetType = VectorType::get(type.getShape(), i32);
  SmallVector<int32_t> colOffsets, diagonalOffsets;
  for (int64_t m = 0; m < rowBlocks; ++m)
    for (int64_t n = 0; n < blocks; ++n)
      for (int64_t v = 0; v < kValuesPerBlock; ++v) {
        int32_t col = kColsPerBlock * n + v % 2;
        int32_t row = kMmaRows * m + 8 * (v / 2);
        colOffsets.push_back(col);
        diagonalOffsets.push_back(col - row);
      }
  auto constants = [&](ArrayRef<int32_t> values) -> Value {
    return arith::ConstantOp::create(
        b, offsetType, DenseElementsAttr::get(offsetType, values));
  };
  auto toI32 = [&](Value value) -> Value {
    return arith::IndexCastOp::create(b, i32, value);
  };
  auto threshold = [&](Value value) -> Value {
    return vector::BroadcastOp::create(b, offsetType, value);
  };
  Lane lane = laneOf(b, rowBlocks);
  Value col0 =
      toI32(arith::AddIOp::create(b, adaptor.getCol(), lane.pairColumn));
  Value masked = arith::CmpIOp::create(
      b, arith::CmpIPredicate::sge, constants(colOffsets),
      threshold(arith::SubIOp::create(b, toI32(adaptor.getKvLen()), col0)));
  if (op.getCausal()) {
    // Key after query: col > row, or (transposed: rows are keys) row > col.
    Value row0 = toI32(laneRow(b, lane, adaptor.getRow(), 0, 0));
    masked = arith::OrIOp::create(
        b, masked,
        arith::CmpIOp::create(b,
                              op.getTransposed() ? arith::CmpIPredicate::slt
                                                 : arith::CmpIPredicate::sgt,
                              constants(diagonalOffsets),
                              threshold(arith::SubIOp::create(b, row0, col0))));
  }
  Value negInf =
      splatConstant(b, type, -std::numeric_limits<double>::infinity());
  Value result =
      arith::SelectOp::create(b, masked, negInf, adaptor.getScores());
  if (op.getTransposed())
    scf::YieldOp::create(b, result);
  else
    rewriter.replaceOp(op, result);
  return success();
}
