//===- DTypeTest.cpp - fp16/bf16 conversions and element types ------------===//

#include "fa/runtime/DType.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/Half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace fa;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(HalfTest, RepresentableValuesConvertExactly) {
  EXPECT_EQ(floatToHalf(0.0f), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);              // Largest half.
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14)), 0x0400); // Smallest normal.
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001); // Smallest subnormal.
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfToFloat(0x7BFF), 65504.0f);
}

TEST(HalfTest, RoundsToNearestTiesToEven) {
  // 1 + 2^-11 lies halfway between 1 and the next half, 1 + 2^-10.
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(floatToHalf(1.0f + 1.5f * std::ldexp(1.0f, -11)), 0x3C01);
  // Ties among subnormals: 2^-25 is halfway between 0 and 2^-24.
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(floatToHalf(3 * std::ldexp(1.0f, -25)), 0x0002);
  // The largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26)), 0x0400);
}

TEST(HalfTest, OverflowInfinityAndNaN) {
  EXPECT_EQ(floatToHalf(65519.0f), 0x7BFF); // Below the halfway point.
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00); // Halfway rounds to infinity.
  EXPECT_EQ(floatToHalf(-1e9f), 0xFC00);
  EXPECT_EQ(floatToHalf(kInf), 0x7C00);
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(std::nanf("")))));
  EXPECT_EQ(halfToFloat(0xFC00), -kInf);
  EXPECT_TRUE(std::isnan(halfToFloat(0xFFFF))); // The poison pattern.
}

TEST(HalfTest, EveryHalfSurvivesARoundTrip) {
  for (unsigned bits = 0; bits <= 0xFFFF; ++bits) {
    float value = halfToFloat(static_cast<std::uint16_t>(bits));
    if (!std::isnan(value))
      ASSERT_EQ(floatToHalf(value), bits) << "bits " << bits;
  }
}

TEST(Bfloat16Test, RoundsToNearestTiesToEven) {
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3F80);
  EXPECT_EQ(floatToBfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3F80); // Tie.
  EXPECT_EQ(floatToBfloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_EQ(floatToBfloat16(1.0f + 1.5f * std::ldexp(1.0f, -8)), 0x3F81);
  EXPECT_EQ(floatToBfloat16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(floatToBfloat16(-kInf), 0xFF80);
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(floatToBfloat16(std::nanf("")))));
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(0xFFFF)));
}

TEST(Bfloat16Test, EveryBfloat16SurvivesARoundTrip) {
  for (unsigned bits = 0; bits <= 0xFFFF; ++bits) {
    float value = bfloat16ToFloat(static_cast<std::uint16_t>(bits));
    if (!std::isnan(value))
      ASSERT_EQ(floatToBfloat16(value), bits) << "bits " << bits;
  }
}

TEST(DTypeTest, ParsesNamesAndRejectsOthers) {
  EXPECT_EQ(parseDType("bf16"), DType::BF16);
  EXPECT_EQ(parseDType("f16"), DType::F16);
  EXPECT_EQ(parseDType("f32"), DType::F32);
  EXPECT_STREQ(dtypeName(DType::BF16), "bf16");
  EXPECT_EQ(dtypeBytes(DType::F16), 2u);
  EXPECT_EQ(dtypeBytes(DType::F32), 4u);
  try {
    parseDType("fp8");
    FAIL() << "expected an error";
  } catch (const Error &error) {
    EXPECT_STREQ(error.what(),
                 "unknown element type 'fp8'; expected bf16, f16 or f32");
  }
}

TEST(DTypeTest, EncodeDecodeRoundsLikeTheKernelType) {
  std::vector<float> values = {1.0f, -0.333333f, 1000.5f, 3e-6f};
  for (DType dtype : {DType::BF16, DType::F16, DType::F32}) {
    Bytes bytes = encode(values, dtype);
    ASSERT_EQ(bytes.size(), values.size() * dtypeBytes(dtype));
    std::vector<float> decoded = decode(bytes, dtype);
    ASSERT_EQ(decoded.size(), values.size());
    for (std::size_t i = 0; i < values.size(); ++i)
      EXPECT_EQ(decoded[i], roundToDType(values[i], dtype)) << dtypeName(dtype);
  }
  EXPECT_EQ(roundToDType(1000.5f, DType::BF16), 1000.0f);
  EXPECT_EQ(roundToDType(1000.5f, DType::F16), 1000.5f);
}

} // namespace
