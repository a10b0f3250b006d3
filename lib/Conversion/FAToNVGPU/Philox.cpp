//===- Philox.cpp - fa.philox and fa.apply_dropout in 32-bit arithmetic ---===//
//
// Philox-4x32-10 per thread, in arith: each round is two 32 x 32 -> 64-bit
// products (arith.mului_extended, which the NVPTX backend selects as
// mul.lo.u32/mul.hi.u32 or mul.wide.u32) and four xors; the key is bumped
// with wrapping adds between rounds, folded away where it is constant.
// fa.apply_dropout draws each element's mask bit that way on the lane's share
// of its tile (TileLayout.h). The CPU reference is
// runtime/include/fa/runtime/Philox.h; a GPU test compares the two bit for bit
// (test/runtime/PhiloxGpuTest.cpp).
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "TileLayout.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <array>

using namespace mlir;
using namespace mlir::fa;

namespace {
// Random123's PHILOX_M4x32_0/1 (multipliers) and PHILOX_W32_0/1 (key
// increments), as in Philox.h.
constexpr uint32_t kMultiplier0 = 0xD2511F53u;
constexpr uint32_t kMultiplier1 = 0xCD9E8D57u;
constexpr uint32_t kKeyIncrement0 = 0x9E3779B9u;
constexpr uint32_t kKeyIncrement1 = 0xBB67AE85u;
constexpr int kRounds = 10;

using Words = std::array<Value, 4>;

Value i32Constant(ImplicitLocOpBuilder &b, uint32_t value) {
  return arith::ConstantOp::create(
      b, b.getI32IntegerAttr(static_cast<int32_t>(value)));
}

/// One round: (hi0, lo0) = M0 * c0, (hi1, lo1) = M1 * c2, then
/// (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0).
Words philoxRound(ImplicitLocOpBuilder &b, const Words &counter, Value key0,
                  Value key1) {
  auto product0 = arith::MulUIExtendedOp::create(
      b, i32Constant(b, kMultiplier0), counter[0]);
  auto product1 = arith::MulUIExtendedOp::create(
      b, i32Constant(b, kMultiplier1), counter[2]);
  auto mix = [&](Value high, Value word, Value key) -> Value {
    return arith::XOrIOp::create(b, arith::XOrIOp::create(b, high, word), key);
  };
  return {mix(product1.getHigh(), counter[1], key0), product1.getLow(),
          mix(product0.getHigh(), counter[3], key1), product0.getLow()};
}

/// Philox-4x32-10: ten rounds, the key bumped by (W0, W1) before each round
/// after the first.
Words philox4x32_10(ImplicitLocOpBuilder &b, Words counter, Value key0,
                    Value key1) {
  for (int round = 0; round < kRounds; ++round) {
    if (round > 0) {
      key0 = arith::AddIOp::create(b, key0, i32Constant(b, kKeyIncrement0));
      key1 = arith::AddIOp::create(b, key1, i32Constant(b, kKeyIncrement1));
    }
    counter = philoxRound(b, counter, key0, key1);
  }
  return counter;
}

/// fa.philox: the ten rounds on its operands.
struct ConvertPhilox : OpConversionPattern<PhiloxOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(PhiloxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Words counter = {adaptor.getCounter0(), adaptor.getCounter1(),
                     adaptor.getCounter2(), adaptor.getCounter3()};
    rewriter.replaceOp(op,
                       ValueRange(philox4x32_10(b, counter, adaptor.getKey0(),
                                                adaptor.getKey1())));
    return success();
  }
};

/// The Philox block of Philox.h's dropout mask that holds the bits of
/// (query, key): the one at counter (key / 4, query, batch_head, offset).
Words maskBlock(ImplicitLocOpBuilder &b, ApplyDropoutOp::Adaptor adaptor,
                Value query, Value key) {
  return philox4x32_10(b,
                       {arith::ShRUIOp::create(b, key, i32Constant(b, 2)),
                        query, adaptor.getBatchHead(), adaptor.getOffset()},
                       adaptor.getSeedLo(), adaptor.getSeedHi());
}

/// The dropout mask bit of `key` from its block `words`: word key % 4, at or
/// above the threshold.
Value keepBit(ImplicitLocOpBuilder &b, const Words &words, Value key,
              Value threshold) {
  Value word = arith::AndIOp::create(b, key, i32Constant(b, 3));
  Value bits = words[0];
  for (uint32_t w = 1; w < 4; ++w)
    bits = arith::SelectOp::create(
        b,
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, word,
                              i32Constant(b, w)),
        words[w], bits);
  return arith::CmpIOp::create(b, arith::CmpIPredicate::uge, bits, threshold);
}

/// Each element of the lane's share keeps the word of its key from its
/// Philox block. A lane's pair of columns starts at an even column, so in a
/// plain tile (columns are keys) both keys of a pair lie in one group of
/// four and share one block: one Philox call per pair. In a transposed tile
/// the pair is two queries, two blocks.
struct ConvertApplyDropout : OpConversionPattern<ApplyDropoutOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ApplyDropoutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value probs = adaptor.getProbs();
    auto type = cast<VectorType>(probs.getType());
    int64_t rowBlocks =
        rowBlocksOf(type, op.getProbs().getType().getDimSize(1));
    int64_t blocks = type.getDimSize(0) / rowBlocks;
    Type i32 = b.getI32Type();
    Value p = adaptor.getP();
    // floor(p * 2^32) (f32 to u32 rounds toward zero) and 1 / (1 - p).
    Value threshold = arith::FPToUIOp::create(
        b, i32,
        arith::MulFOp::create(
            b, p, arith::ConstantOp::create(b, b.getF32FloatAttr(0x1p32))));
    Value one = arith::ConstantOp::create(b, b.getF32FloatAttr(1.0f));
    Value scale =
        arith::DivFOp::create(b, one, arith::SubFOp::create(b, one, p));
    Value zero = arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f));
    Lane lane = laneOf(b, rowBlocks);
    Value col0 = arith::AddIOp::create(b, adaptor.getCol(), lane.pairColumn);
    auto toI32 = [&](Value value) -> Value {
      return arith::IndexCastOp::create(b, i32, value);
    };
    SmallVector<Value> elements;
    Words words;
    for (int64_t m = 0; m < rowBlocks; ++m)
      for (int64_t n = 0; n < blocks; ++n)
        for (int64_t v = 0; v < kValuesPerBlock; ++v) {
          Value row = toI32(laneRow(b, lane, adaptor.getRow(), m, v / 2));
          Value col = toI32(arith::AddIOp::create(
              b, col0, index(b, kColsPerBlock * n + v % 2)));
          auto [query, key] =
              op.getTransposed() ? std::pair{col, row} : std::pair{row, col};
          if (op.getTransposed() || v % 2 == 0)
            words = maskBlock(b, adaptor, query, key);
          Value value = vector::ExtractOp::create(
              b, probs, ArrayRef<int64_t>{m * blocks + n, v});
          elements.push_back(arith::SelectOp::create(
              b, keepBit(b, words, key, threshold),
              arith::MulFOp::create(b, value, scale), zero));
        }
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, type, elements);
    return success();
  }
};
} // namespace

void mlir::fa::populatePhiloxPatterns(const TypeConverter &converter,
                                      RewritePatternSet &patterns) {
  patterns.add<ConvertPhilox, ConvertApplyDropout>(converter,
                                                   patterns.getContext());
}
