//===- Philox.cpp - fa.philox as 32-bit integer arithmetic ----------------===//
//
// Philox-4x32-10 per thread, in arith: each round is two 32 x 32 -> 64-bit
// products (arith.mului_extended, which the NVPTX backend selects as
// mul.lo.u32/mul.hi.u32 or mul.wide.u32) and four xors; the key is bumped
// with wrapping adds between rounds, folded away where it is constant. The
// CPU reference is runtime/include/fa/runtime/Philox.h; a GPU test compares
// the two bit for bit (test/runtime/PhiloxGpuTest.cpp).
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"

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

/// fa.philox: ten rounds, the key bumped by (W0, W1) before each round after
/// the first.
struct ConvertPhilox : OpConversionPattern<PhiloxOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(PhiloxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Words counter = {adaptor.getCounter0(), adaptor.getCounter1(),
                     adaptor.getCounter2(), adaptor.getCounter3()};
    Value key0 = adaptor.getKey0(), key1 = adaptor.getKey1();
    for (int round = 0; round < kRounds; ++round) {
      if (round > 0) {
        key0 = arith::AddIOp::create(b, key0, i32Constant(b, kKeyIncrement0));
        key1 = arith::AddIOp::create(b, key1, i32Constant(b, kKeyIncrement1));
      }
      counter = philoxRound(b, counter, key0, key1);
    }
    rewriter.replaceOp(op, ValueRange(counter));
    return success();
  }
};
} // namespace

void mlir::fa::populatePhiloxPatterns(const TypeConverter &converter,
                                      RewritePatternSet &patterns) {
  patterns.add<ConvertPhilox>(converter, patterns.getContext());
}
