//===- FAToNVGPU.cpp - Tile ops onto warps and tensor cores ---------------===//
//
// The warp-level lowering. One distribution serves every tile: the layout of
// the m16n8k16 accumulator, repeated over the M 16-row blocks a warp owns
// (M = block_m / (16 x warps), 1 or 2). Warp w owns rows [16Mw, 16M(w + 1))
// of a tile; in row block m, lane l holds, in 8-column block n, the columns
// 8n + 2(l%4) + {0, 1} of rows 16m + l/4 and 16m + l/4 + 8. A lane's share of
// an R x C tile is therefore a vector<(M C/8) x 4 x T> whose entry
// [m C/8 + n][2h + e] is element (16Mw + 16m + l/4 + 8h, 8n + 2(l%4) + e).
// The f16/bf16 A operand of m16n8k16 has exactly this layout over two
// adjacent column blocks, which is why probabilities feed the P @ V product
// straight from registers. A per-row vector (R values) becomes
// vector<2M x T>: entry 2m + h is row 16Mw + 16m + l/4 + 8h.
//
// Two row blocks per warp halve the shared-memory traffic per product: each
// K or V fragment read with ldmatrix feeds M tensor-core instructions.
//
// Shared-memory tiles keep their logical shape; the 16-byte chunk c of row r
// is stored at chunk c ^ (r % 8), so that the 8 row addresses of every
// ldmatrix hit 8 different bank groups.
//
//===----------------------------------------------------------------------===//

#include "fa/Conversion/Passes.h"
#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Target/Chips.h"

#include "../ElementwiseConversion.h"
#include "WarpgroupMma.h"

#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>

namespace mlir::fa {
#define GEN_PASS_DEF_CONVERTFATONVGPU
#include "fa/Conversion/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;

namespace {
constexpr int64_t kColsPerBlock = 8; // columns of one n8 accumulator block
constexpr int64_t kValuesPerBlock = 4;
constexpr int64_t kChunkBytes = 16; // one vectorised access, one swizzle unit
constexpr int64_t kSwizzleRows = 8;
/// The leading byte offset wgmma ignores for swizzled K-major operands (and,
/// with one 64-column atom, for MN-major ones): one 16-byte unit.
constexpr int64_t kDescriptorUnitBytes = 16;

/// Maps tile types to a lane's share of them (see the file comment).
class TileTypeConverter : public TypeConverter {
public:
  TileTypeConverter(int64_t blockRows, int64_t rowBlocks) {
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
};

/// The row blocks per warp (M) of a lane's share of a tile with `cols`
/// columns.
int64_t rowBlocksOf(Type share, int64_t cols) {
  return cast<VectorType>(share).getDimSize(0) / (cols / kColsPerBlock);
}

/// The row blocks per warp (M) of a lane's share of a per-row vector.
int64_t rowBlocksOfRows(Type share) {
  return cast<VectorType>(share).getDimSize(0) / 2;
}

/// Where this lane sits in the accumulator layout.
struct Lane {
  Value threadId;   // in the block
  Value warpRow0;   // 16 * M * warp: the warp's first row
  Value rowInTile;  // warpRow0 + lane / 4: the lane's first row
  Value pairColumn; // 2 * (lane % 4): the lane's first column in a block
  Value laneId;
  Value isFirstOfRow; // lane % 4 == 0
};

Value index(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIndexOp::create(b, v);
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

/// The row of the tile starting at `row0` this lane holds in row block `m`,
/// half `h` (0, 1).
Value laneRow(ImplicitLocOpBuilder &b, const Lane &lane, Value row0, int64_t m,
              int64_t h) {
  return arith::AddIOp::create(b,
                               arith::AddIOp::create(b, row0, lane.rowInTile),
                               index(b, kMmaRows * m + 8 * h));
}

Value splatConstant(ImplicitLocOpBuilder &b, VectorType type,
                    TypedAttr element) {
  return arith::ConstantOp::create(b, type,
                                   DenseElementsAttr::get(type, element));
}

/// Elements of `type` in one 16-byte chunk.
int64_t chunkElems(Type type) {
  return kChunkBytes * 8 / type.getIntOrFloatBitWidth();
}

/// A vector's natural alignment: its size in bytes. Without it a
/// vector<2xbf16> access is assumed 2-byte aligned and split into scalar
/// accesses. Every buffer the runtime passes is 16-byte aligned (cp.async
/// relies on it too), rows hold a multiple of 8 elements, and every access
/// here starts at a multiple of its own length.
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

/// Physical column of 16-byte chunk `chunk` of shared-tile row `row`.
Value swizzledColumn(ImplicitLocOpBuilder &b, Value row, Value chunk,
                     Type element) {
  Value phase = arith::RemUIOp::create(b, row, index(b, kSwizzleRows));
  return arith::MulIOp::create(b, arith::XOrIOp::create(b, chunk, phase),
                               index(b, chunkElems(element)));
}

/// (row, first column) in a swizzled shared tile of logical row
/// `rowLane + rowConst` and 16-byte chunk `chunkConst + chunkLane`, where only
/// `rowLane` and `chunkLane` (0 or 1; null for 0) depend on the lane,
/// `rowConst` is a multiple of 8 (so the swizzle phase is `rowLane % 8`) and
/// `chunkConst` is even when there is a `chunkLane`. Since
/// (c + l) ^ p = (c & ~7) + ((c & 7) ^ (l ^ p)) under those conditions, the
/// lane-dependent part takes one of four values and everything else folds
/// into the instruction's immediate offset: without this, each of the
/// dozens of ldmatrix of a key tile (or of the output's staging stores) kept
/// its own address register.
std::pair<Value, Value> splitSwizzledAddress(ImplicitLocOpBuilder &b,
                                             Value rowLane, int64_t rowConst,
                                             Value chunkLane,
                                             int64_t chunkConst, Type element) {
  assert(rowConst % kSwizzleRows == 0 && (!chunkLane || chunkConst % 2 == 0) &&
         "constant parts must not disturb the swizzle phase");
  Value phase = arith::RemUIOp::create(b, rowLane, index(b, kSwizzleRows));
  Value lanePhase =
      chunkLane ? arith::XOrIOp::create(b, chunkLane, phase) : phase;
  Value lowChunk =
      arith::XOrIOp::create(b, lanePhase, index(b, chunkConst % kSwizzleRows));
  Value chunk = arith::AddIOp::create(
      b, lowChunk, index(b, chunkConst - chunkConst % kSwizzleRows));
  return {arith::AddIOp::create(b, rowLane, index(b, rowConst)),
          arith::MulIOp::create(b, chunk, index(b, chunkElems(element)))};
}

/// Physical column of logical column `col` of shared-tile row `row`.
Value swizzledElementColumn(ImplicitLocOpBuilder &b, Value row, Value col,
                            Type element) {
  Value perChunk = index(b, chunkElems(element));
  return arith::AddIOp::create(
      b,
      swizzledColumn(b, row, arith::DivUIOp::create(b, col, perChunk), element),
      arith::RemUIOp::create(b, col, perChunk));
}

/// Loads `width` elements at (batch, head, row, col) of a 4-D buffer, as zero
/// when row >= seq (the address is clamped to stay inside the buffer).
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
  Value zero =
      splatConstant(b, segmentType, b.getFloatAttr(type.getElementType(), 0.0));
  return arith::SelectOp::create(b, valid, segment, zero);
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// Splat tile constants become splats of the lane's share.
struct ConvertSplatConstant : OpConversionPattern<arith::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(arith::ConstantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type =
        dyn_cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    auto value = dyn_cast<SplatElementsAttr>(op.getValue());
    if (!type || !value)
      return rewriter.notifyMatchFailure(op, "only splat tiles are supported");
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op, type,
        DenseElementsAttr::get(type, value.getSplatValue<Attribute>()));
    return success();
  }
};

/// Row reduction: combine the lane's values of each of its two rows, then
/// across the four lanes that share the row (xor 1, xor 2), then with `acc`.
struct ConvertRowReduction : OpConversionPattern<vector::MultiDimReductionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(vector::MultiDimReductionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getSourceVectorType().getRank() != 2 ||
        op.getReductionMask() != ArrayRef<bool>{false, true})
      return rewriter.notifyMatchFailure(op, "only row reductions of tiles");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    vector::CombiningKind kind = op.getKind();
    Value source = adaptor.getSource();
    int64_t rowBlocks = rowBlocksOfRows(adaptor.getAcc().getType());
    int64_t blocks =
        cast<VectorType>(source.getType()).getDimSize(0) / rowBlocks;
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
        for (int32_t offset : {1, 2}) {
          auto shuffle = gpu::ShuffleOp::create(
              b, value, offset, kThreadsPerWarp, gpu::ShuffleMode::XOR);
          value = combine(value, shuffle.getShuffleResult());
        }
        rows.push_back(combine(value, extract(adaptor.getAcc(), 2 * m + h)));
      }
    }
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(
        op, getTypeConverter()->convertType(op.getType()), rows);
    return success();
  }
};

struct ConvertRowBroadcast : OpConversionPattern<RowBroadcastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RowBroadcastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
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
};

/// `tile * row_broadcast(alpha)` in a loop, the online softmax's rescale of
/// its accumulator: multiplying by exactly 1 changes nothing, and after the
/// first key tiles most tiles leave every row maximum, so alpha = 1. A warp
/// whose rows all have alpha == 1 skips the multiplies (one vote; the branch is
/// warp-uniform). Bit-identical to the plain product.
struct ConvertRowScale : OpConversionPattern<arith::MulFOp> {
  ConvertRowScale(const TypeConverter &converter, MLIRContext *context)
      : OpConversionPattern(converter, context, /*benefit=*/2) {}

  LogicalResult
  matchAndRewrite(arith::MulFOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
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
    Value ones =
        splatConstant(b, cast<VectorType>(rowsType), b.getF32FloatAttr(1.0f));
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
};

/// One comparison per element against the key length, and one for
/// causality, each of a constant (the element's offset from the lane's first
/// row and column) against one per-lane threshold:
///   col >= kv_len  <=>  dc >= kv_len - col0
///   col > row      <=>  dc - dr > row0 - col0
/// in 32-bit arithmetic, so that no per-element index is ever materialised.
struct ConvertApplyMask : OpConversionPattern<ApplyMaskOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ApplyMaskOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto type = cast<VectorType>(adaptor.getScores().getType());
    // A transposed mask sits in the backward's dK/dV loop over query tiles,
    // which masks every tile although most have nothing to mask: a uniform
    // branch skips the per-element compares there. Other masks are left in
    // key loops by fa-eliminate-causal-tiles only on the tiles that need
    // them, where the branch would merely cost registers (its phis took the
    // D=64 128x128 wgmma forward from 128 to 169).
    if (op.getTransposed()) {
      auto ifVisible = scf::IfOp::create(b, TypeRange{type},
                                         wholeTileVisible(b, op, adaptor),
                                         /*addThenBlock=*/true,
                                         /*addElseBlock=*/true);
      b.setInsertionPointToStart(ifVisible.thenBlock());
      scf::YieldOp::create(b, adaptor.getScores());
      b.setInsertionPointToStart(ifVisible.elseBlock());
      rewriter.replaceOp(op, ifVisible.getResults());
    }
    int64_t rowBlocks =
        rowBlocksOf(type, op.getScores().getType().getDimSize(1));
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
          arith::CmpIOp::create(
              b,
              op.getTransposed() ? arith::CmpIPredicate::slt
                                 : arith::CmpIPredicate::sgt,
              constants(diagonalOffsets),
              threshold(arith::SubIOp::create(b, row0, col0))));
    }
    Value negInf = splatConstant(
        b, type, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
    Value result =
        arith::SelectOp::create(b, masked, negInf, adaptor.getScores());
    if (op.getTransposed())
      scf::YieldOp::create(b, result);
    else
      rewriter.replaceOp(op, result);
    return success();
  }

  /// Whether no element of the tile is masked (uniform over the block): its
  /// columns all before the sequence end and, with a causal mask, the whole
  /// tile on the visible side of the diagonal.
  static Value wholeTileVisible(ImplicitLocOpBuilder &b, ApplyMaskOp op,
                                OpAdaptor adaptor) {
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
};

/// Each lane loads its pairs straight from global memory: the tile is read
/// once, so staging it through shared memory would not pay.
struct ConvertLoadTile : OpConversionPattern<LoadTileOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LoadTileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto type = cast<VectorType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    int64_t rowBlocks =
        rowBlocksOf(type, op.getResult().getType().getDimSize(1));
    int64_t blocks = type.getDimSize(0) / rowBlocks;
    Lane lane = laneOf(b, rowBlocks);
    Value result =
        splatConstant(b, type, b.getFloatAttr(type.getElementType(), 0.0));
    for (int64_t m = 0; m < rowBlocks; ++m) {
      Value rows[2] = {laneRow(b, lane, adaptor.getRow(), m, 0),
                       laneRow(b, lane, adaptor.getRow(), m, 1)};
      for (int64_t n = 0; n < blocks; ++n) {
        Value col = arith::AddIOp::create(b, lane.pairColumn,
                                          index(b, kColsPerBlock * n));
        Value pairs[2];
        for (int h = 0; h < 2; ++h)
          pairs[h] = loadRowSegment(b, adaptor.getSource(), adaptor.getBatch(),
                                    adaptor.getHead(), rows[h], col, 2);
        Value block = vector::ShuffleOp::create(b, pairs[0], pairs[1],
                                                ArrayRef<int64_t>{0, 1, 2, 3});
        result = vector::InsertOp::create(b, block, result,
                                          ArrayRef<int64_t>{m * blocks + n});
      }
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// wgmma reads shared memory through the async proxy: this thread's writes
/// to shared tiles become visible to it (once everyone passed the barrier
/// that follows).
void fenceForAsyncProxy(ImplicitLocOpBuilder &b) {
  NVVM::FenceProxyOp::create(
      b,
      NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
}

/// How the block splits a copy of a `rows x cols` shared tile into 16-byte
/// chunks: thread t copies chunks t, t + threads, ... (consecutive threads
/// take consecutive chunks of a row, so global reads coalesce).
struct ChunkedCopy {
  int64_t perChunk, chunksPerRow, chunksPerThread;
};

FailureOr<ChunkedCopy> chunkedCopy(Operation *op, MemRefType dest,
                                   int64_t numThreads) {
  int64_t perChunk = chunkElems(dest.getElementType());
  int64_t chunksPerRow = dest.getDimSize(1) / perChunk;
  int64_t chunks = dest.getDimSize(0) * chunksPerRow;
  if (chunks % numThreads != 0)
    return op->emitOpError()
           << "cannot split " << chunks << " 16-byte chunks evenly over "
           << numThreads << " threads";
  return ChunkedCopy{perChunk, chunksPerRow, chunks / numThreads};
}

/// The 128-byte panels a shared-tile row is split into for wgmma (whose
/// 128-byte swizzle atoms are 128 bytes wide): 1 for the ldmatrix layout.
int64_t panelsOf(MemRefType tile, bool warpgroupMma) {
  if (!warpgroupMma)
    return 1;
  int64_t rowBytes = tile.getDimSize(1) * tile.getElementTypeBitWidth() / 8;
  return std::max<int64_t>(1, rowBytes / kSwizzleAtomRowBytes);
}

/// (memref row, first column) of 16-byte chunk `chunk` of logical row `row`
/// of a shared tile of `rows` rows. With one panel: the same row, the chunk
/// swizzled by row % 8. With P panels, the tile is stored panel after panel,
/// each `rows` x 128 bytes with the same swizzle inside: chunk c of row r
/// sits at 128-byte row (c / 8) x rows + r of the buffer, which the
/// [rows][cols] memref holds P to a row.
std::pair<Value, Value> sharedChunkPosition(ImplicitLocOpBuilder &b, Value row,
                                            Value chunk, int64_t rows,
                                            int64_t panels, Type element) {
  if (panels == 1)
    return {row, swizzledColumn(b, row, chunk, element)};
  Value chunksPerPanel = index(b, kSwizzleRows);
  Value swizzled = arith::XOrIOp::create(
      b, arith::RemUIOp::create(b, chunk, chunksPerPanel),
      arith::RemUIOp::create(b, row, index(b, kSwizzleRows)));
  Value panelRow = arith::AddIOp::create(
      b,
      arith::MulIOp::create(b, arith::DivUIOp::create(b, chunk, chunksPerPanel),
                            index(b, rows)),
      row);
  Value memrefRow = arith::DivUIOp::create(b, panelRow, index(b, panels));
  Value memrefChunk = arith::AddIOp::create(
      b,
      arith::MulIOp::create(
          b, arith::RemUIOp::create(b, panelRow, index(b, panels)),
          chunksPerPanel),
      swizzled);
  return {memrefRow,
          arith::MulIOp::create(b, memrefChunk, index(b, chunkElems(element)))};
}

/// Calls `copyChunk(view, viewRow, viewCol, sourceRow, sourceCol)` for each
/// chunk this thread copies: the chunk sits at (viewRow, viewCol) of `view`,
/// `tile` or a view of some of its rows, `viewCol` already swizzled; the
/// tile stored in `panels` panels (see sharedChunkPosition).
template <typename Adaptor>
void forEachChunk(
    ImplicitLocOpBuilder &b, const ChunkedCopy &copy, int64_t numThreads,
    Value tile, int64_t panels, Adaptor adaptor,
    function_ref<void(Value, Value, Value, Value, Value)> copyChunk) {
  auto tileType = cast<MemRefType>(tile.getType());
  Type element = tileType.getElementType();
  int64_t rows = tileType.getDimSize(0);
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  // When the block covers whole rows per step, thread t's chunks share one
  // column and sit a constant number of rows apart: two lane values and
  // constant offsets (immediates), instead of a row and a column per chunk,
  // which stayed live wherever copies of the same shape were CSE'd.
  int64_t rowsPerStep = numThreads / copy.chunksPerRow;
  bool wholeRows = numThreads % copy.chunksPerRow == 0;
  Value firstRow = arith::DivUIOp::create(b, tid, index(b, copy.chunksPerRow));
  Value firstCol = arith::RemUIOp::create(b, tid, index(b, copy.chunksPerRow));
  // When the step is also a multiple of the swizzle period, every chunk has
  // the first one's swizzle phase: chunk i is (firstRow, one swizzled column)
  // of a view starting i steps down, whose constant offset becomes the
  // instruction's immediate. Indexing the tile at firstRow + i x step instead
  // left LLVM one 64-bit shared address per chunk, live across the loop.
  // With panels, chunk i sits step / panels memref rows further down.
  if (wholeRows && rowsPerStep % kSwizzleRows == 0 &&
      rowsPerStep % panels == 0) {
    auto [viewRow, viewCol] =
        sharedChunkPosition(b, firstRow, firstCol, rows, panels, element);
    for (int64_t i = 0; i < copy.chunksPerThread; ++i) {
      int64_t rowOffset = i * rowsPerStep;
      int64_t viewOffset = rowOffset / panels;
      int64_t viewRows = panels == 1 ? rowsPerStep : rows - viewOffset;
      Value view = memref::SubViewOp::create(
          b, tile, ArrayRef<int64_t>{viewOffset, 0},
          ArrayRef<int64_t>{viewRows, tileType.getDimSize(1)},
          ArrayRef<int64_t>{1, 1});
      Value tileRow = arith::AddIOp::create(b, firstRow, index(b, rowOffset));
      copyChunk(view, viewRow, viewCol,
                arith::AddIOp::create(b, adaptor.getRow(), tileRow),
                arith::MulIOp::create(b, firstCol, index(b, copy.perChunk)));
    }
    return;
  }
  for (int64_t i = 0; i < copy.chunksPerThread; ++i) {
    Value row, chunkCol;
    if (wholeRows) {
      row = arith::AddIOp::create(b, firstRow, index(b, i * rowsPerStep));
      chunkCol = firstCol;
    } else {
      Value chunk = arith::AddIOp::create(b, tid, index(b, i * numThreads));
      row = arith::DivUIOp::create(b, chunk, index(b, copy.chunksPerRow));
      chunkCol = arith::RemUIOp::create(b, chunk, index(b, copy.chunksPerRow));
    }
    auto [tileRow, tileCol] =
        sharedChunkPosition(b, row, chunkCol, rows, panels, element);
    copyChunk(tile, tileRow, tileCol,
              arith::AddIOp::create(b, adaptor.getRow(), row),
              arith::MulIOp::create(b, chunkCol, index(b, copy.perChunk)));
  }
}

/// The block copies 16-byte chunks into the swizzled shared tile, between
/// barriers: readers of the previous contents are done before it starts, and
/// every chunk is visible to every warp after it.
struct ConvertStageTile : OpConversionPattern<StageTileOp> {
  ConvertStageTile(const TypeConverter &converter, MLIRContext *context,
                   int64_t numThreads, bool warpgroupMma)
      : OpConversionPattern(converter, context), numThreads(numThreads),
        warpgroupMma(warpgroupMma) {}

  LogicalResult
  matchAndRewrite(StageTileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    MemRefType dest = op.getDest().getType();
    FailureOr<ChunkedCopy> copy = chunkedCopy(op, dest, numThreads);
    if (failed(copy))
      return failure();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    gpu::BarrierOp::create(b);
    forEachChunk(
        b, *copy, numThreads, adaptor.getDest(), panelsOf(dest, warpgroupMma),
        adaptor,
        [&](Value view, Value row, Value col, Value srcRow, Value srcCol) {
          Value data =
              loadRowSegment(b, adaptor.getSource(), adaptor.getBatch(),
                             adaptor.getHead(), srcRow, srcCol, copy->perChunk);
          vector::StoreOp::create(b, data, view, ValueRange{row, col});
        });
    if (warpgroupMma)
      fenceForAsyncProxy(b);
    gpu::BarrierOp::create(b);
    rewriter.eraseOp(op);
    return success();
  }

  int64_t numThreads;
  bool warpgroupMma;
};

/// cp.async of each 16-byte chunk, rows past the sequence end zero-filled
/// (source size 0, from a clamped, valid address), then one commit group.
struct ConvertCopyTileAsync : OpConversionPattern<CopyTileAsyncOp> {
  ConvertCopyTileAsync(const TypeConverter &converter, MLIRContext *context,
                       int64_t numThreads, bool warpgroupMma)
      : OpConversionPattern(converter, context), numThreads(numThreads),
        warpgroupMma(warpgroupMma) {}

  LogicalResult
  matchAndRewrite(CopyTileAsyncOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    MemRefType dest = op.getDest().getType();
    FailureOr<ChunkedCopy> copy = chunkedCopy(op, dest, numThreads);
    if (failed(copy))
      return failure();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value source = adaptor.getSource();
    Value seq = memref::DimOp::create(b, source, 2);
    Value lastRow = arith::SubIOp::create(b, seq, index(b, 1));
    Value full = index(b, copy->perChunk), none = index(b, 0);
    forEachChunk(
        b, *copy, numThreads, adaptor.getDest(), panelsOf(dest, warpgroupMma),
        adaptor,
        [&](Value view, Value row, Value col, Value srcRow, Value srcCol) {
          Value valid =
              arith::CmpIOp::create(b, arith::CmpIPredicate::ult, srcRow, seq);
          nvgpu::DeviceAsyncCopyOp::create(
              b, view, ValueRange{row, col}, source,
              ValueRange{adaptor.getBatch(), adaptor.getHead(),
                         arith::MinUIOp::create(b, srcRow, lastRow), srcCol},
              b.getIndexAttr(copy->perChunk),
              arith::SelectOp::create(b, valid, full, none), b.getUnitAttr());
        });
    NVVM::CpAsyncCommitGroupOp::create(b);
    rewriter.eraseOp(op);
    return success();
  }

  int64_t numThreads;
  bool warpgroupMma;
};

/// All of this thread's copies landed, then everyone's (a barrier).
struct ConvertWaitTiles : OpConversionPattern<WaitTilesOp> {
  ConvertWaitTiles(const TypeConverter &converter, MLIRContext *context,
                   bool warpgroupMma)
      : OpConversionPattern(converter, context), warpgroupMma(warpgroupMma) {}

  LogicalResult
  matchAndRewrite(WaitTilesOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    NVVM::CpAsyncWaitGroupOp::create(b, 0);
    if (warpgroupMma)
      fenceForAsyncProxy(b);
    rewriter.replaceOpWithNewOp<gpu::BarrierOp>(op);
    return success();
  }

  bool warpgroupMma;
};

/// Issues one mma.sync into 8-column block `block` of the accumulator.
Value mmaIntoBlock(ImplicitLocOpBuilder &b, NVVM::MMATypes ptxType,
                   int64_t kSize, ValueRange aRegs, ValueRange bRegs, Value acc,
                   int64_t block) {
  Type f32 = b.getF32Type();
  Value accBlock = vector::ExtractOp::create(b, acc, ArrayRef<int64_t>{block});
  SmallVector<Value> cRegs;
  for (int64_t v = 0; v < kValuesPerBlock; ++v)
    cRegs.push_back(
        vector::ExtractOp::create(b, accBlock, ArrayRef<int64_t>{v}));
  auto resultType =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  Value result =
      NVVM::MmaOp::create(b, b.getLoc(), resultType, aRegs, bRegs, cRegs,
                          {16, 8, kSize}, std::nullopt, std::nullopt,
                          std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
                          std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                                         NVVM::MMALayout::col});
  SmallVector<Value> values;
  for (int64_t v = 0; v < kValuesPerBlock; ++v)
    values.push_back(LLVM::ExtractValueOp::create(b, result, v));
  Value newBlock = vector::FromElementsOp::create(
      b, VectorType::get({kValuesPerBlock}, f32), values);
  return vector::InsertOp::create(b, newBlock, acc, ArrayRef<int64_t>{block});
}

/// acc += a @ b on tensor cores. B is read from shared memory either as
/// stored `[K][N]` or, with transpose_b, as `[N][K]` (so q @ k^T reads K as
/// staged).
struct ConvertTileMatmul : OpConversionPattern<TileMatmulOp> {
  ConvertTileMatmul(const TypeConverter &converter, MLIRContext *context,
                    bool warpgroupMma)
      : OpConversionPattern(converter, context), warpgroupMma(warpgroupMma) {}

  LogicalResult
  matchAndRewrite(TileMatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value result;
    if (getElementTypeOrSelf(op.getA().getType()).isF32())
      result = lowerSplitTF32(b, op, adaptor);
    else if (warpgroupMma)
      result = lowerWarpgroup(b, op, adaptor);
    else
      result = lowerHalf(b, op, adaptor);
    rewriter.replaceOp(op, result);
    return success();
  }

private:
  bool warpgroupMma;

  /// f16/bf16 on Hopper warpgroup MMAs: each 4-warp group multiplies its 64
  /// rows of A by all of B, one wgmma per 16-wide k step. The accumulator
  /// layout of m64nNk16 is the m16n8 layout of each warp's 16 rows repeated
  /// over N / 8 column blocks, i.e. the lane's share as it is; a register A
  /// (the probabilities) is the m16n8k16 A fragment per warp, as for
  /// mma.sync. Shared tiles have 128-byte rows whose 16-byte chunks are
  /// swizzled by row % 8, which is wgmma's 128-byte swizzle: A and a
  /// transposed B (stored [N][K]) are K-major, a k step 32 bytes further
  /// along the rows; an untransposed B (stored [K][N]) is MN-major, a k step
  /// 16 rows further down.
  static Value lowerWarpgroup(ImplicitLocOpBuilder &b, TileMatmulOp op,
                              OpAdaptor adaptor) {
    auto aType = cast<ShapedType>(op.getA().getType());
    Type element = aType.getElementType();
    int64_t k = aType.getDimSize(1);
    int64_t n = op.getAcc().getType().getDimSize(1);
    int64_t accBlocks = n / kColsPerBlock;
    bool transposeB = op.getTransposeB();
    auto byteOffset = [&](int64_t bytes) {
      return arith::ConstantIndexOp::create(b, bytes).getResult();
    };
    // Rows longer than 128 bytes are stored as 128-byte panels, one after
    // the other (see sharedChunkPosition); a K-major k step past a panel's
    // 128 bytes moves to the next panel.
    int64_t stepBytes = 16 * element.getIntOrFloatBitWidth() / 8;
    auto kMajorOffset = [&](Value tile, int64_t kStep) {
      int64_t panelBytes =
          cast<MemRefType>(tile.getType()).getDimSize(0) * kSwizzleAtomRowBytes;
      int64_t bytes = kStep * stepBytes;
      return bytes / kSwizzleAtomRowBytes * panelBytes +
             bytes % kSwizzleAtomRowBytes;
    };
    // The warpgroup's 64 rows of a shared A.
    Value aRows;
    if (isa<MemRefType>(adaptor.getA().getType())) {
      Value warpgroup = arith::DivUIOp::create(
          b, gpu::ThreadIdOp::create(b, gpu::Dimension::x),
          index(b, 4 * kThreadsPerWarp));
      aRows = arith::MulIOp::create(
          b, warpgroup, index(b, 4 * kMmaRows * kSwizzleAtomRowBytes));
    }
    auto bType = cast<MemRefType>(adaptor.getB().getType());
    SmallVector<WarpgroupMmaStep> steps;
    for (int64_t kStep = 0; kStep < k / 16; ++kStep) {
      WarpgroupMmaStep step;
      if (aRows) {
        step.aDescriptor = sharedMatrixDescriptor(
            b, adaptor.getA(),
            arith::AddIOp::create(
                b, aRows, byteOffset(kMajorOffset(adaptor.getA(), kStep))),
            kDescriptorUnitBytes, kSwizzleAtomBytes);
      } else {
        step.aRegisters =
            operandRegisters(b, element, adaptor.getA(), 0, kStep);
        for (Value &reg : step.aRegisters)
          reg = asI32(b, reg);
      }
      // K-major B: 32 bytes along the rows; MN-major B: 16 rows down, the
      // 8-row groups of the step 1024 bytes apart and its 64-column atoms a
      // panel apart.
      int64_t panelBytes = bType.getDimSize(0) * kSwizzleAtomRowBytes;
      step.bDescriptor = sharedMatrixDescriptor(
          b, adaptor.getB(),
          byteOffset(transposeB ? kMajorOffset(adaptor.getB(), kStep)
                                : 16 * kStep * kSwizzleAtomRowBytes),
          transposeB ? kDescriptorUnitBytes : panelBytes, kSwizzleAtomBytes);
      steps.push_back(step);
    }
    // The accumulator in wgmma's order (block by block, 4 values each);
    // none when it starts as zeros.
    SmallVector<Value> accValues;
    if (!matchPattern(op.getAcc(), m_AnyZeroFloat()))
      for (int64_t block = 0; block < accBlocks; ++block)
        for (int64_t v = 0; v < kValuesPerBlock; ++v)
          accValues.push_back(vector::ExtractOp::create(
              b, adaptor.getAcc(), ArrayRef<int64_t>{block, v}));
    SmallVector<Value> issued =
        issueWarpgroupMma(b, element.isF16() ? "f16" : "bf16", n,
                          /*mnMajorB=*/!transposeB, accValues, steps);
    auto [waitBefore, pending] = warpgroupWaitPoint(op);
    b.setInsertionPoint(waitBefore);
    SmallVector<Value> results = waitForWarpgroupMma(b, issued, pending);
    return vector::FromElementsOp::create(
        b, cast<VectorType>(adaptor.getAcc().getType()), results);
  }

  /// Where to wait for `op`'s product, and how many commit groups may still
  /// be in flight there: before the first op of its block that uses the
  /// result (or holds a use), leaving pending the products issued directly
  /// in the block in between, which were committed after it (commit groups
  /// complete in order). Issued early, a product then runs while the warps
  /// work on something else: the backward issues its two score-like
  /// products back to back and waits for the second only when it needs it.
  /// Products in nested regions are not counted, which only makes the wait
  /// stricter.
  static std::pair<Operation *, int64_t> warpgroupWaitPoint(TileMatmulOp op) {
    Block *block = op->getBlock();
    Operation *firstUse = nullptr;
    for (Operation *user : op->getUsers()) {
      Operation *inBlock = block->findAncestorOpInBlock(*user);
      if (inBlock && (!firstUse || inBlock->isBeforeInBlock(firstUse)))
        firstUse = inBlock;
    }
    if (!firstUse)
      return {op->getNextNode(), 0};
    int64_t pending = 0;
    for (Operation *between = op->getNextNode(); between != firstUse;
         between = between->getNextNode())
      if (auto product = dyn_cast<TileMatmulOp>(between))
        pending += !getElementTypeOrSelf(product.getA().getType()).isF32();
    return {firstUse, pending};
  }

  /// A register pair as the i32 an asm operand takes.
  static Value asI32(ImplicitLocOpBuilder &b, Value pair) {
    if (pair.getType().isInteger(32))
      return pair;
    Value word = vector::BitCastOp::create(
        b, VectorType::get({1}, b.getI32Type()), pair);
    return vector::ExtractOp::create(b, word, ArrayRef<int64_t>{0});
  }

  /// f16/bf16 with m16n8k16: per 16-wide k step, the A operand of each row
  /// block is two adjacent column blocks of `a` (or an ldmatrix x4 when `a`
  /// is in shared memory); one ldmatrix x4 yields the B operands of two
  /// adjacent 8-column output blocks, for every row block.
  static Value lowerHalf(ImplicitLocOpBuilder &b, TileMatmulOp op,
                         OpAdaptor adaptor) {
    auto aType = cast<ShapedType>(op.getA().getType());
    Type element = aType.getElementType();
    int64_t k = aType.getDimSize(1);
    int64_t n = op.getAcc().getType().getDimSize(1);
    int64_t rowBlocks = rowBlocksOf(adaptor.getAcc().getType(), n);
    int64_t accBlocks = n / kColsPerBlock;
    bool transposeB = op.getTransposeB();
    NVVM::MMATypes ptxType =
        element.isF16() ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
    Lane lane = laneOf(b, rowBlocks);
    // Which row of an 8x8 matrix, and which of the four matrices, this lane
    // addresses for ldmatrix.
    Value rowInMatrix = arith::RemUIOp::create(b, lane.laneId, index(b, 8));
    Value matrix = arith::DivUIOp::create(b, lane.laneId, index(b, 8));
    Value matrixLow = arith::RemUIOp::create(b, matrix, index(b, 2));
    Value matrixHigh = arith::DivUIOp::create(b, matrix, index(b, 2));
    auto fragmentType = VectorType::get({4, 2}, element);
    auto loadFragments = [&](Value tile, Value rowLane, int64_t rowConst,
                             Value chunkLane, int64_t chunkConst,
                             bool transpose) -> Value {
      auto [row, col] = splitSwizzledAddress(b, rowLane, rowConst, chunkLane,
                                             chunkConst, element);
      return nvgpu::LdMatrixOp::create(b, fragmentType, tile,
                                       ValueRange{row, col}, transpose,
                                       /*numTiles=*/4);
    };
    // The lane's row within a 16-row step when the four matrices are
    // stacked (low, high) = (rows +0/+8, chunks +0/+1), and the other way.
    Value rowsByLow = arith::AddIOp::create(
        b, rowInMatrix, arith::MulIOp::create(b, matrixLow, index(b, 8)));
    Value rowsByHigh = arith::AddIOp::create(
        b, rowInMatrix, arith::MulIOp::create(b, matrixHigh, index(b, 8)));

    // A staged in shared memory is read through a view of the warp's rows:
    // the lane's addresses are then the view's base plus lane-dependent and
    // constant parts, which LLVM folds into four address registers and
    // immediates. Indexed at warpRow0 + row instead, every (k step, row
    // block) kept its own address register.
    Value aWarpRows;
    if (auto aTile = dyn_cast<MemRefType>(adaptor.getA().getType())) {
      SmallVector<OpFoldResult> offsets = {lane.warpRow0, b.getIndexAttr(0)};
      SmallVector<OpFoldResult> sizes = {b.getIndexAttr(rowBlocks * kMmaRows),
                                         b.getIndexAttr(aTile.getDimSize(1))};
      SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
      aWarpRows =
          memref::SubViewOp::create(b, adaptor.getA(), offsets, sizes, strides);
    }
    Value acc = adaptor.getAcc();
    for (int64_t kStep = 0; kStep < k / 16; ++kStep) {
      SmallVector<SmallVector<Value>> aRegs;
      for (int64_t m = 0; m < rowBlocks; ++m) {
        if (isa<VectorType>(adaptor.getA().getType())) {
          aRegs.push_back(
              operandRegisters(b, element, adaptor.getA(), m * (k / 8), kStep));
          continue;
        }
        // A staged [M][K]: matrices (m, k), (m+8, k), (m, k+8), (m+8, k+8)
        // are exactly the registers a0..a3 of m16n8k16.
        Value fragments =
            loadFragments(aWarpRows, rowsByLow, kMmaRows * m, matrixHigh,
                          2 * kStep, /*transpose=*/false);
        SmallVector<Value> regs;
        for (int64_t r = 0; r < 4; ++r)
          regs.push_back(packPair(
              b, element,
              vector::ExtractOp::create(b, fragments, ArrayRef<int64_t>{r})));
        aRegs.push_back(regs);
      }
      for (int64_t nPair = 0; nPair < n / 16; ++nPair) {
        // B stored [N][K] (transposed): matrices (n, k), (n, k+8), (n+8, k),
        // (n+8, k+8). Stored [K][N]: (k, n), (k+8, n), (k, n+8), (k+8, n+8),
        // read transposed. Either way registers 0-1 feed block 2*nPair and
        // registers 2-3 block 2*nPair + 1.
        Value fragments =
            transposeB
                ? loadFragments(adaptor.getB(), rowsByHigh, 16 * nPair,
                                matrixLow, 2 * kStep, /*transpose=*/false)
                : loadFragments(adaptor.getB(), rowsByLow, 16 * kStep,
                                matrixHigh, 2 * nPair, /*transpose=*/true);
        for (int64_t half = 0; half < 2; ++half) {
          SmallVector<Value> bRegs;
          for (int64_t r = 0; r < 2; ++r)
            bRegs.push_back(
                packPair(b, element,
                         vector::ExtractOp::create(
                             b, fragments, ArrayRef<int64_t>{2 * half + r})));
          for (int64_t m = 0; m < rowBlocks; ++m)
            acc = mmaIntoBlock(b, ptxType, 16, aRegs[m], bRegs, acc,
                               m * accBlocks + 2 * nPair + half);
        }
      }
    }
    return acc;
  }

  /// An f16x2 pair is passed as is; a bf16x2 pair as its 32 bits.
  static Value packPair(ImplicitLocOpBuilder &b, Type element, Value pair) {
    if (element.isF16())
      return pair;
    Value word = vector::BitCastOp::create(
        b, VectorType::get({1}, b.getI32Type()), pair);
    return vector::ExtractOp::create(b, word, ArrayRef<int64_t>{0});
  }

  /// The four A registers of k step `kStep` of the row block whose column
  /// blocks start at `firstBlock`: column blocks 2k and 2k + 1, each holding
  /// pairs of rows r and r + 8.
  static SmallVector<Value> operandRegisters(ImplicitLocOpBuilder &b,
                                             Type element, Value a,
                                             int64_t firstBlock,
                                             int64_t kStep) {
    Value low = vector::ExtractOp::create(
        b, a, ArrayRef<int64_t>{firstBlock + 2 * kStep});
    Value high = vector::ExtractOp::create(
        b, a, ArrayRef<int64_t>{firstBlock + 2 * kStep + 1});
    SmallVector<Value> regs;
    for (Value block : {low, high})
      for (int64_t h = 0; h < 2; ++h)
        regs.push_back(
            packPair(b, element,
                     vector::ExtractStridedSliceOp::create(
                         b, block, ArrayRef<int64_t>{2 * h},
                         ArrayRef<int64_t>{2}, ArrayRef<int64_t>{1})));
    return regs;
  }

  /// f32 with m16n8k8 on TF32 tensor cores, in three products for close to
  /// f32 accuracy: x = big + small with big = x rounded to TF32, and
  /// a @ b ~ small_a @ big_b + big_a @ small_b + big_a @ big_b.
  /// The TF32 A operand wants columns (t, t + 4) of an 8-wide k block in lane
  /// slots where the accumulator layout holds columns (2t, 2t + 1). A k
  /// permutation applied to both operands leaves the product unchanged, so
  /// slot t reads logical column 2t and slot t + 4 column 2t + 1, in A and
  /// in B alike: no data moves between lanes.
  static Value lowerSplitTF32(ImplicitLocOpBuilder &b, TileMatmulOp op,
                              OpAdaptor adaptor) {
    Type element = b.getF32Type();
    int64_t k = cast<ShapedType>(op.getA().getType()).getDimSize(1);
    int64_t n = op.getAcc().getType().getDimSize(1);
    int64_t rowBlocks = rowBlocksOf(adaptor.getAcc().getType(), n);
    int64_t accBlocks = n / kColsPerBlock;
    bool transposeB = op.getTransposeB();
    Lane lane = laneOf(b, rowBlocks);
    Value group = arith::DivUIOp::create(b, lane.laneId, index(b, 4));
    Value bTile = adaptor.getB();

    // B element (kk, nn) of the logical [K][N] operand.
    auto loadB = [&](Value kk, Value nn) -> Value {
      Value row = transposeB ? nn : kk, col = transposeB ? kk : nn;
      return memref::LoadOp::create(
          b, bTile,
          ValueRange{row, swizzledElementColumn(b, row, col, element)});
    };

    // The tensor cores truncate while they accumulate; a long chain of
    // mma.sync into one accumulator drifts (the error grew with K and with
    // the number of key tiles). So each k block's three products start from
    // zero and reach the accumulator through one rounded f32 add.
    Value acc = adaptor.getAcc();
    auto partialType = VectorType::get({1, kValuesPerBlock}, b.getF32Type());
    Value zero = splatConstant(b, partialType, b.getF32FloatAttr(0.0f));
    for (int64_t nBlock = 0; nBlock < accBlocks; ++nBlock) {
      Value nn =
          arith::AddIOp::create(b, group, index(b, kColsPerBlock * nBlock));
      SmallVector<Value> sums;
      for (int64_t m = 0; m < rowBlocks; ++m)
        sums.push_back(vector::ExtractOp::create(
            b, acc, ArrayRef<int64_t>{m * accBlocks + nBlock}));
      for (int64_t kBlock = 0; kBlock < k / kColsPerBlock; ++kBlock) {
        Value k0 = arith::AddIOp::create(b, lane.pairColumn,
                                         index(b, kColsPerBlock * kBlock));
        Value k1 = arith::AddIOp::create(b, k0, index(b, 1));
        auto [bBig, bSmall] = splitTF32(b, {loadB(k0, nn), loadB(k1, nn)});
        for (int64_t m = 0; m < rowBlocks; ++m) {
          auto [aBig, aSmall] = splitTF32(
              b, tf32OperandValues(b, lane, adaptor.getA(), m, k, kBlock));
          Value partial =
              mmaIntoBlock(b, NVVM::MMATypes::tf32, 8, aSmall, bBig, zero, 0);
          partial = mmaIntoBlock(b, NVVM::MMATypes::tf32, 8, aBig, bSmall,
                                 partial, 0);
          partial =
              mmaIntoBlock(b, NVVM::MMATypes::tf32, 8, aBig, bBig, partial, 0);
          sums[m] = arith::AddFOp::create(
              b, sums[m],
              vector::ExtractOp::create(b, partial, ArrayRef<int64_t>{0}));
        }
      }
      for (int64_t m = 0; m < rowBlocks; ++m)
        acc = vector::InsertOp::create(
            b, sums[m], acc, ArrayRef<int64_t>{m * accBlocks + nBlock});
    }
    return acc;
  }

  /// The lane's four A values of 8-column block `kBlock` of row block `m`,
  /// in slot order: entries 0, 2, 1, 3 of the accumulator layout, read from
  /// the register tile or from the (swizzled) shared-memory tile.
  static SmallVector<Value> tf32OperandValues(ImplicitLocOpBuilder &b,
                                              const Lane &lane, Value a,
                                              int64_t m, int64_t k,
                                              int64_t kBlock) {
    SmallVector<Value> values;
    if (isa<VectorType>(a.getType())) {
      Value block = vector::ExtractOp::create(
          b, a, ArrayRef<int64_t>{m * (k / kColsPerBlock) + kBlock});
      for (int64_t entry : {0, 2, 1, 3})
        values.push_back(
            vector::ExtractOp::create(b, block, ArrayRef<int64_t>{entry}));
      return values;
    }
    Type f32 = b.getF32Type();
    Value col = arith::AddIOp::create(b, lane.pairColumn,
                                      index(b, kColsPerBlock * kBlock));
    Value pairs[2];
    for (int h = 0; h < 2; ++h) {
      Value row = arith::AddIOp::create(b, lane.rowInTile,
                                        index(b, kMmaRows * m + 8 * h));
      pairs[h] = vector::LoadOp::create(
          b, VectorType::get({2}, f32), a,
          ValueRange{row, swizzledElementColumn(b, row, col, f32)});
    }
    for (auto [h, e] : {std::pair{0, 0}, {1, 0}, {0, 1}, {1, 1}})
      values.push_back(
          vector::ExtractOp::create(b, pairs[h], ArrayRef<int64_t>{e}));
    return values;
  }

  /// Rounds f32 bits to the nearest TF32 (10 mantissa bits; ties away from
  /// zero): add half of the dropped unit, then clear the dropped bits. A carry
  /// out of the mantissa correctly bumps the exponent.
  static Value roundToTF32Bits(ImplicitLocOpBuilder &b, Value bits) {
    Type i32 = b.getI32Type();
    Value half = arith::ConstantIntOp::create(b, i32, 0x1000);
    Value keep = arith::ConstantIntOp::create(b, i32, 0xFFFFE000);
    return arith::AndIOp::create(b, arith::AddIOp::create(b, bits, half), keep);
  }

  /// Splits f32 values into TF32 high parts and TF32 remainders, both as the
  /// 32-bit registers mma.sync takes. Both parts rounded, x - big - small is
  /// below 2^-22 |x|.
  static std::pair<SmallVector<Value>, SmallVector<Value>>
  splitTF32(ImplicitLocOpBuilder &b, ArrayRef<Value> values) {
    Type i32 = b.getI32Type(), f32 = b.getF32Type();
    SmallVector<Value> bigs, smalls;
    for (Value value : values) {
      Value bigBits =
          roundToTF32Bits(b, arith::BitcastOp::create(b, i32, value));
      Value small = arith::SubFOp::create(
          b, value, arith::BitcastOp::create(b, f32, bigBits));
      bigs.push_back(bigBits);
      smalls.push_back(
          roundToTF32Bits(b, arith::BitcastOp::create(b, i32, small)));
    }
    return {bigs, smalls};
  }
};

/// Without a staging tile, each lane stores its pairs, skipping rows at or
/// beyond the sequence end. With one, the lanes' pairs go to the (swizzled)
/// staging tile, and the block then writes 16-byte chunks of whole rows,
/// consecutive threads on consecutive chunks: a warp's store covers whole
/// 32-byte sectors instead of eight half-used ones.
struct ConvertStoreTile : OpConversionPattern<StoreTileOp> {
  ConvertStoreTile(const TypeConverter &converter, MLIRContext *context,
                   int64_t numThreads)
      : OpConversionPattern(converter, context), numThreads(numThreads) {}

  LogicalResult
  matchAndRewrite(StoreTileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value staging = adaptor.getStaging();
    if (!staging) {
      storePairs(b, op, adaptor, adaptor.getDest(), /*toStaging=*/false);
      rewriter.eraseOp(op);
      return success();
    }
    auto stagingType = cast<MemRefType>(staging.getType());
    FailureOr<ChunkedCopy> copy = chunkedCopy(op, stagingType, numThreads);
    if (failed(copy))
      return failure();
    // Every warp is done with the staging tile's previous contents (the
    // query tile) before any lane overwrites it, and every pair has landed
    // before the chunks are read.
    gpu::BarrierOp::create(b);
    storePairs(b, op, adaptor, staging, /*toStaging=*/true);
    gpu::BarrierOp::create(b);
    Value dest = adaptor.getDest();
    Value seq = memref::DimOp::create(b, dest, 2);
    auto chunkType =
        VectorType::get({copy->perChunk}, stagingType.getElementType());
    forEachChunk(
        b, *copy, numThreads, staging, /*panels=*/1, adaptor,
        [&](Value view, Value row, Value col, Value destRow, Value destCol) {
          Value chunk = alignedLoad(b, chunkType, view, ValueRange{row, col});
          Value inside =
              arith::CmpIOp::create(b, arith::CmpIPredicate::ult, destRow, seq);
          auto ifOp = scf::IfOp::create(b, inside, /*withElseRegion=*/false);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(ifOp.thenBlock());
          alignedStore(b, chunk, dest,
                       ValueRange{adaptor.getBatch(), adaptor.getHead(),
                                  destRow, destCol});
        });
    rewriter.eraseOp(op);
    return success();
  }

private:
  /// Stores each lane's pairs: into rows of the global slice (bounds-checked)
  /// or into the swizzled staging tile (tile-relative rows, all of them).
  static void storePairs(ImplicitLocOpBuilder &b, StoreTileOp op,
                         OpAdaptor adaptor, Value target, bool toStaging) {
    Value value = adaptor.getValue();
    int64_t rowBlocks =
        rowBlocksOf(value.getType(), op.getValue().getType().getDimSize(1));
    int64_t blocks =
        cast<VectorType>(value.getType()).getDimSize(0) / rowBlocks;
    Type element = getElementTypeOrSelf(value.getType());
    Lane lane = laneOf(b, rowBlocks);
    Value seq = toStaging ? Value() : memref::DimOp::create(b, target, 2);
    Value firstRow = toStaging ? index(b, 0) : adaptor.getRow();
    for (int64_t rowSlot = 0; rowSlot < 2 * rowBlocks; ++rowSlot) {
      int64_t m = rowSlot / 2, h = rowSlot % 2;
      Value row = laneRow(b, lane, firstRow, m, h);
      OpBuilder::InsertionGuard guard(b);
      if (!toStaging) {
        Value inside =
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, seq);
        auto ifOp = scf::IfOp::create(b, inside, /*withElseRegion=*/false);
        b.setInsertionPointToStart(ifOp.thenBlock());
      }
      for (int64_t n = 0; n < blocks; ++n) {
        Value pair = vector::ExtractStridedSliceOp::create(
            b,
            vector::ExtractOp::create(b, value,
                                      ArrayRef<int64_t>{m * blocks + n}),
            ArrayRef<int64_t>{2 * h}, ArrayRef<int64_t>{2},
            ArrayRef<int64_t>{1});
        Value col = arith::AddIOp::create(b, lane.pairColumn,
                                          index(b, kColsPerBlock * n));
        if (toStaging) {
          // Lane part + constant, as for ldmatrix: 8 address registers
          // instead of one per pair.
          auto [stagingRow, chunkStart] =
              splitSwizzledAddress(b, lane.rowInTile, kMmaRows * m + 8 * h,
                                   /*chunkLane=*/Value(), n, element);
          alignedStore(
              b, pair, target,
              ValueRange{stagingRow, arith::AddIOp::create(b, chunkStart,
                                                           lane.pairColumn)});
        } else
          alignedStore(
              b, pair, target,
              ValueRange{adaptor.getBatch(), adaptor.getHead(), row, col});
      }
    }
  }

  int64_t numThreads;
};

/// The first lane of each row stores the row's value.
struct ConvertStoreRows : OpConversionPattern<StoreRowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(StoreRowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value dest = adaptor.getDest();
    Value seq = memref::DimOp::create(b, dest, 2);
    int64_t rowBlocks = rowBlocksOfRows(adaptor.getValue().getType());
    Lane lane = laneOf(b, rowBlocks);
    for (int64_t rowSlot = 0; rowSlot < 2 * rowBlocks; ++rowSlot) {
      Value row = laneRow(b, lane, adaptor.getRow(), rowSlot / 2, rowSlot % 2);
      Value inside = arith::AndIOp::create(
          b, lane.isFirstOfRow,
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, seq));
      auto ifOp = scf::IfOp::create(b, inside, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      memref::StoreOp::create(
          b,
          vector::ExtractOp::create(b, adaptor.getValue(),
                                    ArrayRef<int64_t>{rowSlot}),
          dest, ValueRange{adaptor.getBatch(), adaptor.getHead(), row});
    }
    rewriter.eraseOp(op);
    return success();
  }
};

/// f32 `source[batch, head, index]`, or 0 when `index` >= seq (the index is
/// clamped so the load stays inside the buffer).
Value loadStat(ImplicitLocOpBuilder &b, Value source, Value batch, Value head,
               Value position) {
  Value seq = memref::DimOp::create(b, source, 2);
  Value inside =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, position, seq);
  Value last = arith::SubIOp::create(b, seq, index(b, 1));
  Value value = memref::LoadOp::create(
      b, source,
      ValueRange{batch, head, arith::MinUIOp::create(b, position, last)});
  return arith::SelectOp::create(
      b, inside, value, arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f)));
}

/// Each lane loads the values of its rows (the inverse of store_rows).
struct ConvertLoadRows : OpConversionPattern<LoadRowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LoadRowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto type = cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    int64_t rowBlocks = rowBlocksOfRows(type);
    Lane lane = laneOf(b, rowBlocks);
    SmallVector<Value> rows;
    for (int64_t rowSlot = 0; rowSlot < 2 * rowBlocks; ++rowSlot)
      rows.push_back(loadStat(
          b, adaptor.getSource(), adaptor.getBatch(), adaptor.getHead(),
          laneRow(b, lane, adaptor.getRow(), rowSlot / 2, rowSlot % 2)));
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, type, rows);
    return success();
  }
};

/// Each lane loads the values of its columns (two per 8-column block), the
/// same for both of its rows in every row block.
struct ConvertColumnBroadcast : OpConversionPattern<ColumnBroadcastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ColumnBroadcastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto type = cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    int64_t cols = op.getType().getDimSize(1);
    int64_t rowBlocks = rowBlocksOf(type, cols);
    int64_t blocks = cols / kColsPerBlock;
    Lane lane = laneOf(b, rowBlocks);
    Value first = arith::AddIOp::create(b, adaptor.getCol(), lane.pairColumn);
    // The lane's columns: a pair per 8-column block. Loads of a tile that
    // lies inside the sequence (all but the last) need no clamping, which
    // leaves one address plus immediates; the last tile clamps each.
    auto loadColumns = [&](bool clamp) {
      SmallVector<Value> columns;
      for (int64_t n = 0; n < blocks; ++n)
        for (int64_t e = 0; e < 2; ++e) {
          Value position =
              arith::AddIOp::create(b, first, index(b, kColsPerBlock * n + e));
          columns.push_back(
              clamp ? loadStat(b, adaptor.getSource(), adaptor.getBatch(),
                               adaptor.getHead(), position)
                    : memref::LoadOp::create(b, adaptor.getSource(),
                                             ValueRange{adaptor.getBatch(),
                                                        adaptor.getHead(),
                                                        position}));
        }
      scf::YieldOp::create(b, columns);
    };
    Value seq = memref::DimOp::create(b, adaptor.getSource(), 2);
    Value whole = arith::CmpIOp::create(
        b, arith::CmpIPredicate::ule,
        arith::AddIOp::create(b, adaptor.getCol(), index(b, cols)), seq);
    SmallVector<Type> columnTypes(2 * blocks, b.getF32Type());
    auto columns = scf::IfOp::create(b, columnTypes, whole,
                                     /*addThenBlock=*/true,
                                     /*addElseBlock=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(columns.thenBlock());
      loadColumns(/*clamp=*/false);
      b.setInsertionPointToStart(columns.elseBlock());
      loadColumns(/*clamp=*/true);
    }
    SmallVector<Value> values;
    for (int64_t m = 0; m < rowBlocks; ++m)
      for (int64_t n = 0; n < blocks; ++n) {
        Value pair[2] = {columns.getResult(2 * n),
                         columns.getResult(2 * n + 1)};
        // Entries 2h + e: the same pair for rows l/4 and l/4 + 8.
        llvm::append_range(values,
                           ArrayRef<Value>{pair[0], pair[1], pair[0], pair[1]});
      }
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, type, values);
    return success();
  }
};

/// The 16-row blocks each warp owns (1 or 2): block_m / (16 x warps), 1
/// without a block_m.
FailureOr<int64_t> rowBlocksPerWarp(gpu::GPUFuncOp func, int64_t numWarps) {
  int64_t blockM = getTileConfigEntry(func, "block_m", numWarps * kMmaRows);
  for (int64_t rowBlocks : {1, 2})
    if (blockM == rowBlocks * numWarps * kMmaRows)
      return rowBlocks;
  return func.emitError() << "convert-fa-to-nvgpu: fa.tile block_m (" << blockM
                          << ") must be 16 or 32 x the kernel's " << numWarps
                          << " warps",
         failure();
}

struct ConvertFAToNVGPUPass
    : public mlir::fa::impl::ConvertFAToNVGPUBase<ConvertFAToNVGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    targetChip = lookupChip(chip);
    if (!targetChip) {
      emitError(getOperation()->getLoc())
          << "convert-fa-to-nvgpu: unsupported chip '" << chip
          << "' (supported: " << getSupportedChipList() << ")";
      return signalPassFailure();
    }
    WalkResult result = getOperation()->walk([&](gpu::GPUFuncOp func) {
      return failed(convertKernel(func)) ? WalkResult::interrupt()
                                         : WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

  LogicalResult convertKernel(gpu::GPUFuncOp func) {
    // Row-wise kernels have a lowering of their own (convert-fa-rows-to-gpu).
    if (func->hasAttr(kRowsConfigAttr))
      return success();
    std::optional<ArrayRef<int32_t>> blockSize = func.getKnownBlockSize();
    if (!blockSize || (*blockSize)[0] < kThreadsPerWarp ||
        (*blockSize)[0] > kMaxAttentionWarps * kThreadsPerWarp ||
        (*blockSize)[0] % kThreadsPerWarp != 0 || (*blockSize)[1] != 1 ||
        (*blockSize)[2] != 1) {
      bool hasTileOps = false;
      func.walk([&](Operation *op) {
        hasTileOps |= isa<FADialect>(op->getDialect());
      });
      if (hasTileOps)
        return func.emitError()
               << "convert-fa-to-nvgpu: expects known_block_size = [32 * "
                  "warps, 1, 1] with 1 to "
               << kMaxAttentionWarps << " warps on a kernel with tile ops";
      return success();
    }
    int64_t numThreads = (*blockSize)[0];
    FailureOr<int64_t> rowBlocks =
        rowBlocksPerWarp(func, numThreads / kThreadsPerWarp);
    if (failed(rowBlocks))
      return failure();
    int64_t blockRows = numThreads / kThreadsPerWarp * kMmaRows * *rowBlocks;

    MLIRContext *context = &getContext();
    TileTypeConverter converter(blockRows, *rowBlocks);
    ConversionTarget target(*context);
    target.addIllegalDialect<FADialect>();
    target.markUnknownOpDynamicallyLegal(
        [&](Operation *op) { return converter.isLegal(op); });
    RewritePatternSet patterns(context);
    if (getTileConfigEntry(func, "skip_unit_rescale", 1) != 0)
      patterns.add<ConvertRowScale>(converter, context);
    bool warpgroupMma = getTileConfigEntry(func, "wgmma", 0) != 0;
    // wgmma exists only in sm_90a's architecture-specific instruction set.
    if (warpgroupMma && !targetChip->warpgroupMma)
      return func.emitError() << "convert-fa-to-nvgpu: wgmma = 1 needs chip "
                                 "sm_90a (Hopper's wgmma.mma_async), not "
                              << chip;
    patterns.add<ConvertSplatConstant, ConvertElementwise, ConvertRowReduction,
                 ConvertRowBroadcast, ConvertApplyMask, ConvertLoadTile,
                 ConvertStoreRows, ConvertLoadRows, ConvertColumnBroadcast>(
        converter, context);
    patterns.add<ConvertTileMatmul, ConvertWaitTiles>(converter, context,
                                                      warpgroupMma);
    patterns.add<ConvertStoreTile>(converter, context, numThreads);
    patterns.add<ConvertStageTile, ConvertCopyTileAsync>(
        converter, context, numThreads, warpgroupMma);
    scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns,
                                                         target);
    return applyPartialConversion(func, target, std::move(patterns));
  }

  /// The entry of the `chip` option.
  const ChipInfo *targetChip = nullptr;
};
} // namespace
