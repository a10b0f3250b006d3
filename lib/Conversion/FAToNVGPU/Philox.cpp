//===- Philox.cpp - fa.philox and fa.apply_dropout in 32-bit arithmetic ---===//
//
// Philox-4x32-10 per thread, in arith: each round is two 32 x 32 -> 64-bit
// products (arith.mului_extended, which the NVPTX backend selects as
// mul.lo.u32/mul.hi.u32 or mul.wide.u32) and four xors; the key is bumped
// with wrapping adds between rounds, folded away where it is constant.
// fa.apply_dropout draws each element's 16 mask bits that way on the lane's
// share of its tile (TileLayout.h), one call for each group of the lane's
// elements that provably share a block (up to 8). The CPU reference is
// runtime/include/fa/runtime/Philox.h; a GPU test compares the two bit for bit
// (test/runtime/PhiloxGpuTest.cpp).
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "TileLayout.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Matchers.h"

#include <algorithm>
#include <array>
#include <map>
#include <vector>

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

// The dropout mask's layout (Philox.h): query i and key j take the 16-bit
// value t = 4 ((i / 8) mod 2) + (j / 8) mod 4 of the block at counter
// (8 (j / 32) + j mod 8, 8 (i / 16) + i mod 8, batch_head, offset), i.e.
// word 2 ((i / 8) mod 2) + (j / 16) mod 2, half (j / 8) mod 2.
constexpr uint32_t keyCounter(uint32_t key) { return 8 * (key / 32) + key % 8; }
constexpr uint32_t queryCounter(uint32_t query) {
  return 8 * (query / 16) + query % 8;
}
constexpr uint32_t queryWordBit(uint32_t query) { return query / 8 % 2; }
constexpr uint32_t keyWordBit(uint32_t key) { return key / 16 % 2; }
constexpr uint32_t keyHalfBit(uint32_t key) { return key / 8 % 2; }
// Each of these functions f satisfies f(x + 32 a) = f(x) + f(32 a) - f(0):
// adding a multiple of 32 to a coordinate shifts f by an amount that does
// not depend on x. ConvertApplyDropout relies on it.
static_assert(keyCounter(37 + 64) - keyCounter(37) == keyCounter(64) &&
              queryCounter(21 + 64) - queryCounter(21) == queryCounter(64));

/// The largest power of two up to 2^30 that provably divides the index or
/// integer `value`: from constants through muli, shli, addi, subi, remui,
/// select, integer casts and scf.for induction variables; 1 where nothing
/// is known.
int64_t knownPowerOfTwoDivisor(Value value, int depth = 0) {
  constexpr int64_t kMax = int64_t{1} << 30;
  if (depth > 12)
    return 1;
  auto of = [&](Value operand) {
    return knownPowerOfTwoDivisor(operand, depth + 1);
  };
  if (auto argument = dyn_cast<BlockArgument>(value)) {
    auto loop =
        dyn_cast_or_null<scf::ForOp>(argument.getOwner()->getParentOp());
    if (loop && argument == loop.getInductionVar())
      return std::min(of(loop.getLowerBound()), of(loop.getStep()));
    return 1;
  }
  Operation *op = value.getDefiningOp();
  APInt constant;
  if (matchPattern(value, m_ConstantInt(&constant)))
    return constant.isZero() ? kMax
                             : std::min(kMax, int64_t{1} << std::min<unsigned>(
                                                  constant.countr_zero(), 30));
  if (isa<arith::MulIOp>(op))
    return std::min(kMax, of(op->getOperand(0)) * of(op->getOperand(1)));
  if (isa<arith::ShLIOp>(op) &&
      matchPattern(op->getOperand(1), m_ConstantInt(&constant)) &&
      constant.ult(30))
    return std::min(kMax, of(op->getOperand(0)) << constant.getZExtValue());
  if (isa<arith::AddIOp, arith::SubIOp, arith::RemUIOp>(op))
    return std::min(of(op->getOperand(0)), of(op->getOperand(1)));
  if (isa<arith::SelectOp>(op))
    return std::min(of(op->getOperand(1)), of(op->getOperand(2)));
  if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtUIOp,
          arith::ExtSIOp, arith::TruncIOp>(op))
    return of(op->getOperand(0));
  return 1;
}

/// One coordinate (query or key) of a lane's elements of a tile: origin +
/// lane part + a constant of the element, where the origin (the same for
/// all of the lane's elements) is a multiple of `alignment`, a power of two
/// up to 32, and the lane part (fixed per lane) one of `laneParts`.
struct Coordinate {
  int64_t alignment;
  SmallVector<uint32_t> laneParts;

  /// f of the element at `constant` for every admissible origin mod 32 and
  /// lane part. By f's property above, two elements of the lane whose
  /// patterns agree agree at run time: their coordinates differ from the
  /// pattern's by the same multiple of 32.
  std::vector<uint32_t> pattern(uint32_t (*f)(uint32_t),
                                uint32_t constant) const {
    std::vector<uint32_t> values;
    for (uint32_t origin = 0; origin < 32; origin += alignment)
      for (uint32_t part : laneParts)
        values.push_back(f(origin + part + constant));
    return values;
  }
};

/// Lowers fa.apply_dropout on a lane's share (TileLayout.h): each element
/// keeps or drops its probability by its 16-bit value of Philox.h's mask.
/// Elements whose counters are provably equal (same patterns over every
/// admissible tile origin and lane) share one Philox call, and so do the
/// run-time word and half choices that are not provably constant. With the
/// tile's first row a multiple of 16 and first column of 32, a tile whose
/// columns are keys takes one call per 8 elements and picks each element's
/// bits with constants; where nothing is known about the origin, every
/// element takes its own call and choices, which is right for any origin.
class DropoutLowering {
public:
  DropoutLowering(ImplicitLocOpBuilder &b, ApplyDropoutOp::Adaptor adaptor)
      : b(b), adaptor(adaptor) {}

  /// Whether the element at (query, key), whose constants in its
  /// coordinates are queryConstant and keyConstant, keeps its value:
  /// its bits, aligned to the top of a word, against `thresholdHigh`.
  Value keep(Value query, Value key, const Coordinate &queries,
             uint32_t queryConstant, const Coordinate &keys,
             uint32_t keyConstant, Value thresholdHigh) {
    const Words &words =
        block(query, key, queries.pattern(queryCounter, queryConstant),
              keys.pattern(keyCounter, keyConstant));
    Bit wordHigh = bit(query, /*isKey=*/false, 3,
                       queries.pattern(queryWordBit, queryConstant));
    Bit wordLow =
        bit(key, /*isKey=*/true, 4, keys.pattern(keyWordBit, keyConstant));
    Bit half =
        bit(key, /*isKey=*/true, 3, keys.pattern(keyHalfBit, keyConstant));
    Value word = choose(wordHigh, [&](uint32_t high) {
      return choose(wordLow,
                    [&](uint32_t low) { return words[2 * high + low]; });
    });
    Value aligned = choose(half, [&](uint32_t upper) -> Value {
      return upper ? word : arith::ShLIOp::create(b, word, i32Constant(b, 16));
    });
    return arith::CmpIOp::create(b, arith::CmpIPredicate::uge, aligned,
                                 thresholdHigh);
  }

private:
  /// A choice between two values: known (`value` null) or made at run
  /// time by `value`.
  struct Bit {
    uint32_t known = 0;
    Value value;
  };

  /// The Philox block of the element at (query, key), shared by all
  /// elements with the same counter patterns.
  const Words &block(Value query, Value key, std::vector<uint32_t> queryKey,
                     std::vector<uint32_t> keyKey) {
    auto [it, inserted] =
        blocks.try_emplace({std::move(queryKey), std::move(keyKey)});
    if (inserted) {
      // (8 (key / 32) + key mod 8, 8 (query / 16) + query mod 8).
      auto counter = [&](Value coordinate, uint32_t groupShift) -> Value {
        Value group =
            arith::ShRUIOp::create(b, coordinate, i32Constant(b, groupShift));
        Value groupFirst = arith::ShLIOp::create(b, group, i32Constant(b, 3));
        Value low = arith::AndIOp::create(b, coordinate, i32Constant(b, 7));
        return arith::OrIOp::create(b, groupFirst, low);
      };
      it->second = philox4x32_10(b,
                                 {counter(key, 5), counter(query, 4),
                                  adaptor.getBatchHead(), adaptor.getOffset()},
                                 adaptor.getSeedLo(), adaptor.getSeedHi());
    }
    return it->second;
  }

  /// Bit `shift` of `coordinate` (the key's or the query's): constant where
  /// its pattern is, else computed once per pattern.
  Bit bit(Value coordinate, bool isKey, uint32_t shift,
          std::vector<uint32_t> pattern) {
    if (llvm::all_equal(pattern))
      return {pattern.front(), Value()};
    auto [it, inserted] =
        bits.try_emplace({{isKey, shift}, std::move(pattern)});
    if (inserted)
      it->second = arith::CmpIOp::create(
          b, arith::CmpIPredicate::ne,
          arith::AndIOp::create(b, coordinate, i32Constant(b, 1u << shift)),
          i32Constant(b, 0));
    return {0, it->second};
  }

  /// pick(bit) where the bit is known, else a select of pick(1), pick(0).
  Value choose(const Bit &bit, llvm::function_ref<Value(uint32_t)> pick) {
    if (!bit.value)
      return pick(bit.known);
    Value ifZero = pick(0);
    Value ifOne = pick(1);
    return arith::SelectOp::create(b, bit.value, ifOne, ifZero);
  }

  ImplicitLocOpBuilder &b;
  ApplyDropoutOp::Adaptor adaptor;
  std::map<std::pair<std::vector<uint32_t>, std::vector<uint32_t>>, Words>
      blocks;
  std::map<std::pair<std::pair<bool, uint32_t>, std::vector<uint32_t>>, Value>
      bits;
};

/// fa.apply_dropout: the threshold and scale once, then for each element of
/// the lane's share its keep bit (DropoutLowering) and value * scale or 0.
/// The lane holds rows rowOrigin + lane / 4 + 16 m + 8 h (rowOrigin = row +
/// the warp's first row, a multiple of 16 M) and columns col + 2 (lane % 4)
/// + 8 n + e; transposed, rows are keys and columns queries.
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
    // floor(p * 2^16) (f32 to u32 rounds toward zero), moved to the top
    // half of a word to meet each element's bits there; and 1 / (1 - p).
    Value threshold = arith::FPToUIOp::create(
        b, i32,
        arith::MulFOp::create(
            b, p, arith::ConstantOp::create(b, b.getF32FloatAttr(0x1p16))));
    Value thresholdHigh =
        arith::ShLIOp::create(b, threshold, i32Constant(b, 16));
    Value one = arith::ConstantOp::create(b, b.getF32FloatAttr(1.0f));
    Value scale =
        arith::DivFOp::create(b, one, arith::SubFOp::create(b, one, p));
    Value zero = arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f));
    Lane lane = laneOf(b, rowBlocks);
    Value col0 = arith::AddIOp::create(b, adaptor.getCol(), lane.pairColumn);
    auto toI32 = [&](Value value) -> Value {
      return arith::IndexCastOp::create(b, i32, value);
    };
    // The origins' alignment: the operands' known divisors (the warp's
    // first row is a multiple of 16 M), up to 32.
    auto upTo32 = [](int64_t alignment) {
      return std::min<int64_t>(alignment, 32);
    };
    Coordinate rows{upTo32(std::min(knownPowerOfTwoDivisor(op.getRow()),
                                    kMmaRows * rowBlocks)),
                    {0, 1, 2, 3, 4, 5, 6, 7}};
    Coordinate cols{upTo32(knownPowerOfTwoDivisor(op.getCol())), {0, 2, 4, 6}};
    bool transposed = op.getTransposed();
    const Coordinate &queries = transposed ? cols : rows;
    const Coordinate &keys = transposed ? rows : cols;
    DropoutLowering lowering(b, adaptor);
    SmallVector<Value> elements;
    for (int64_t m = 0; m < rowBlocks; ++m)
      for (int64_t n = 0; n < blocks; ++n)
        for (int64_t v = 0; v < kValuesPerBlock; ++v) {
          Value row = toI32(laneRow(b, lane, adaptor.getRow(), m, v / 2));
          Value col = toI32(arith::AddIOp::create(
              b, col0, index(b, kColsPerBlock * n + v % 2)));
          auto rowConstant = static_cast<uint32_t>(kMmaRows * m + 8 * (v / 2));
          auto colConstant = static_cast<uint32_t>(kColsPerBlock * n + v % 2);
          Value kept = transposed
                           ? lowering.keep(col, row, queries, colConstant, keys,
                                           rowConstant, thresholdHigh)
                           : lowering.keep(row, col, queries, rowConstant, keys,
                                           colConstant, thresholdHigh);
          Value value = vector::ExtractOp::create(
              b, probs, ArrayRef<int64_t>{m * blocks + n, v});
          elements.push_back(arith::SelectOp::create(
              b, kept, arith::MulFOp::create(b, value, scale), zero));
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
