//===- RegionTiles.cpp - Mask and score regions per element ---------------===//
//
// fa.mask_tile and fa.score_tile carry a copy of fa.attention's mask or score
// region. Each lane evaluates the region once per element of its share of
// the tile (TileLayout.h), with the element's query and key indices bound to
// the region's arguments: the region's ops are cloned per element and the
// canonicalizer and CSE that follow fold what the elements share (a row's
// document id, a head's slope). Only the tiles the classifier leaves partial
// carry a mask_tile; a score_tile runs on every tile.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "TileLayout.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <limits>

using namespace mlir;
using namespace mlir::fa;

namespace {
/// The indices of one element of a lane's share: its query and key.
struct ElementIndices {
  Value query, key;
};

Value toNarrow(ImplicitLocOpBuilder &b, Value value);

/// Calls `fn(position, indices)` for every element of the lane's share of a
/// tile whose first row is `row0` and first column `col0` (rows are keys
/// when `transposed`); the indices are i32.
void forEachElement(ImplicitLocOpBuilder &b, VectorType share, int64_t cols,
                    Value row0, Value col0, bool transposed,
                    function_ref<void(ArrayRef<int64_t>, ElementIndices)> fn) {
  int64_t rowBlocks = rowBlocksOf(share, cols);
  int64_t blocks = share.getDimSize(0) / rowBlocks;
  Lane lane = laneOf(b, rowBlocks);
  Value laneRow0 = toNarrow(b, arith::AddIOp::create(b, row0, lane.rowInTile));
  Value laneCol0 = toNarrow(b, arith::AddIOp::create(b, col0, lane.pairColumn));
  auto plus = [&](Value base, int64_t offset) -> Value {
    return arith::AddIOp::create(
        b, base, arith::ConstantIntOp::create(b, b.getI32Type(), offset));
  };
  for (int64_t m = 0; m < rowBlocks; ++m)
    for (int64_t n = 0; n < blocks; ++n)
      for (int64_t v = 0; v < kValuesPerBlock; ++v) {
        Value row = plus(laneRow0, kMmaRows * m + 8 * (v / 2));
        Value col = plus(laneCol0, kColsPerBlock * n + v % 2);
        ElementIndices indices =
            transposed ? ElementIndices{col, row} : ElementIndices{row, col};
        fn({m * blocks + n, v}, indices);
      }
}

/// Index arithmetic in 32 bits: sequence positions, heads and batches fit,
/// and a lane holds every element's indices at once (64-bit ones doubled the
/// registers of the partial tiles and spilled).
Type narrowed(Type type) {
  return type.isIndex() ? IntegerType::get(type.getContext(), 32) : type;
}

Value toIndex(ImplicitLocOpBuilder &b, Value value) {
  if (value.getType().isIndex())
    return value;
  return arith::IndexCastOp::create(b, b.getIndexType(), value);
}

Value toNarrow(ImplicitLocOpBuilder &b, Value value) {
  if (!value.getType().isIndex())
    return value;
  return arith::IndexCastOp::create(b, b.getI32Type(), value);
}

/// tanh(x) = 1 - 2 / (1 + e^(2x)) with the GPU's ex2.approx and
/// rcp.approx: two special-function instructions and two multiply-adds per
/// score, where libdevice's tanhf took the softcap forward from 375 to 144
/// TFLOP/s (H100, D=128, N=4096). Both approximations are within a few ulp
/// of f32 (tanh.approx.f32 alone would err by up to 2^-11, which a softcap
/// of 30 turns into 0.015 in a logit); e^(2x) = inf gives 1, 0 gives -1.
Value fastTanh(ImplicitLocOpBuilder &b, Value x) {
  Type f32 = b.getF32Type();
  auto constant = [&](double value) -> Value {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(value));
  };
  Value e = math::Exp2Op::create(
      b, arith::MulFOp::create(b, x, constant(2.0 * M_LOG2E)));
  Value r = NVVM::RcpApproxFtzF32Op::create(
      b, f32, arith::AddFOp::create(b, e, constant(1.0)));
  return math::FmaOp::create(b, r, constant(-2.0), constant(1.0));
}

/// Reciprocals of the f32 divisors a tile's regions divide by, made once:
/// softcap's s / c is a full-precision division per score otherwise.
using Reciprocals = DenseMap<Value, Value>;

/// Clones `op` through `mapping` with index results computed in i32: arith
/// ops on indices take i32 operands, an index_cast of an i32 becomes a
/// sign extension or stays, memref.load gets its indices back as index.
/// An f32 division becomes a product with the divisor's reciprocal (within
/// an ulp), tanh fastTanh.
void cloneNarrowed(ImplicitLocOpBuilder &b, Operation &op, IRMapping &mapping,
                   Reciprocals &reciprocals) {
  if (auto div = dyn_cast<arith::DivFOp>(op); div && div.getType().isF32()) {
    Value divisor = mapping.lookup(div.getRhs());
    Value &reciprocal = reciprocals[divisor];
    if (!reciprocal)
      reciprocal = arith::DivFOp::create(
          b, arith::ConstantOp::create(b, b.getF32FloatAttr(1.0)), divisor);
    mapping.map(
        div.getResult(),
        arith::MulFOp::create(b, mapping.lookup(div.getLhs()), reciprocal));
    return;
  }
  if (auto tanh = dyn_cast<math::TanhOp>(op); tanh && tanh.getType().isF32()) {
    mapping.map(tanh.getResult(),
                fastTanh(b, mapping.lookup(tanh.getOperand())));
    return;
  }
  if (auto cast = dyn_cast<arith::IndexCastOp>(op)) {
    Value in = mapping.lookup(cast.getIn());
    Type out = narrowed(cast.getType());
    Value result = in;
    if (in.getType() != out)
      result =
          out.getIntOrFloatBitWidth() > in.getType().getIntOrFloatBitWidth()
              ? Value(arith::ExtSIOp::create(b, out, in))
              : Value(arith::TruncIOp::create(b, out, in));
    mapping.map(cast.getResult(), result);
    return;
  }
  if (auto load = dyn_cast<memref::LoadOp>(op)) {
    SmallVector<Value> indices =
        llvm::map_to_vector(load.getIndices(), [&](Value index) {
          return toIndex(b, mapping.lookup(index));
        });
    mapping.map(
        load.getResult(),
        memref::LoadOp::create(b, mapping.lookup(load.getMemRef()), indices));
    return;
  }
  bool hasIndex = llvm::any_of(op.getResultTypes(),
                               [](Type type) { return type.isIndex(); }) ||
                  llvm::any_of(op.getOperandTypes(),
                               [](Type type) { return type.isIndex(); });
  if (!hasIndex || op.getDialect()->getNamespace() != "arith") {
    b.clone(op, mapping);
    return;
  }
  OperationState state(op.getLoc(), op.getName());
  for (Value operand : op.getOperands())
    state.addOperands(mapping.lookup(operand));
  for (Type type : op.getResultTypes())
    state.addTypes(narrowed(type));
  state.addAttributes(op.getAttrs());
  if (auto constant = dyn_cast<arith::ConstantIndexOp>(op))
    state.attributes.set("value", b.getI32IntegerAttr(constant.value()));
  Operation *narrow = b.create(state);
  mapping.map(op.getResults(), narrow->getResults());
}

/// Clones `region`'s ops with its block arguments bound to `args` (indices
/// as i32); returns the value its fa.yield yields.
Value inlineRegion(ImplicitLocOpBuilder &b, Region &region, ValueRange args,
                   Reciprocals &reciprocals) {
  Block &block = region.front();
  IRMapping mapping;
  mapping.map(block.getArguments(), args);
  for (Operation &op : block.without_terminator())
    cloneNarrowed(b, op, mapping, reciprocals);
  return mapping.lookupOrDefault(
      cast<YieldOp>(block.getTerminator()).getValues().front());
}

/// The arguments every element of a tile shares, narrowed to i32 once:
/// batch, head (after the per-element ones) and the captures.
struct SharedArgs {
  Value batch, head;
  SmallVector<Value> captures;

  SharedArgs(ImplicitLocOpBuilder &b, Value batch, Value head,
             ValueRange captures)
      : batch(toNarrow(b, batch)), head(toNarrow(b, head)) {
    for (Value value : captures)
      this->captures.push_back(toNarrow(b, value));
  }

  /// The region's arguments: `score` (for a score region), batch, head,
  /// the element's indices, the captures.
  SmallVector<Value> regionArgs(Value score, ElementIndices e) const {
    SmallVector<Value> args;
    if (score)
      args.push_back(score);
    args.append({batch, head, e.query, e.key});
    llvm::append_range(args, captures);
    return args;
  }
};

struct ConvertMaskTile : OpConversionPattern<MaskTileOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MaskTileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value scores = adaptor.getScores();
    auto share = cast<VectorType>(scores.getType());
    Value negInf = arith::ConstantOp::create(
        b, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
    // Keys (queries when transposed) at or past kv_len are past the end.
    bool transposed = op.getTransposed();
    Value kvLen = toNarrow(b, adaptor.getKvLen());
    SharedArgs shared(b, adaptor.getBatch(), adaptor.getHead(),
                      adaptor.getCaptures());
    SmallVector<Value> elements;
    Reciprocals reciprocals;
    forEachElement(
        b, share, op.getScores().getType().getDimSize(1), adaptor.getRow(),
        adaptor.getCol(), transposed,
        [&](ArrayRef<int64_t> position, ElementIndices e) {
          Value bounded = transposed ? e.query : e.key;
          Value keep = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                             bounded, kvLen);
          if (op.getCausal())
            keep = arith::AndIOp::create(
                b, keep,
                arith::CmpIOp::create(b, arith::CmpIPredicate::ule, e.key,
                                      e.query));
          Value kept = inlineRegion(b, op.getMask(),
                                    shared.regionArgs(Value(), e), reciprocals);
          keep = arith::AndIOp::create(b, keep, kept);
          Value value = vector::ExtractOp::create(b, scores, position);
          elements.push_back(arith::SelectOp::create(b, keep, value, negInf));
        });
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, share, elements);
    return success();
  }
};

struct ConvertScoreTile : OpConversionPattern<ScoreTileOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ScoreTileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value scores = adaptor.getScores();
    auto share = cast<VectorType>(scores.getType());
    SharedArgs shared(b, adaptor.getBatch(), adaptor.getHead(),
                      adaptor.getCaptures());
    SmallVector<Value> elements;
    Reciprocals reciprocals;
    forEachElement(
        b, share, op.getScores().getType().getDimSize(1), adaptor.getRow(),
        adaptor.getCol(), op.getTransposed(),
        [&](ArrayRef<int64_t> position, ElementIndices e) {
          Value value = vector::ExtractOp::create(b, scores, position);
          elements.push_back(inlineRegion(
              b, op.getScore(), shared.regionArgs(value, e), reciprocals));
        });
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, share, elements);
    return success();
  }
};
} // namespace

void mlir::fa::populateRegionTilePatterns(const TypeConverter &converter,
                                          RewritePatternSet &patterns) {
  patterns.add<ConvertMaskTile, ConvertScoreTile>(converter,
                                                  patterns.getContext());
}
