//===- MemoryBudgetTest.cpp - sizes checked before anything is allocated --===//

#include "fa/runtime/MemoryBudget.h"
#include "fa/runtime/AttentionShape.h"
#include "fa/runtime/CheckedMath.h"
#include "fa/runtime/LayerNormShape.h"
#include "fa/runtime/Tensor.h"

#include "../ErrorTesting.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

using namespace fa;
using fa::errortest::errorOf;

namespace {

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

TEST(CheckedMathTest, ProductsAndSumsThatDoNotFitAreErrors) {
  EXPECT_EQ(checkedMultiply<std::int64_t>(1 << 20, 1 << 20, "x"),
            std::int64_t{1} << 40);
  EXPECT_EQ(errorOf([] {
              checkedMultiply<std::int64_t>(std::int64_t{1} << 32,
                                            std::int64_t{1} << 31, "sizing q");
            }),
            "sizing q: 4294967296 x 2147483648 overflows a 64-bit integer");
  EXPECT_EQ(errorOf([] {
              checkedAdd<std::uint64_t>(
                  std::numeric_limits<std::uint64_t>::max(), 1, "summing");
            }),
            "summing: 18446744073709551615 + 1 overflows a 64-bit integer");
}

TEST(CheckedMathTest, RoundUpPadsToTheNextMultiple) {
  EXPECT_EQ(roundUp<std::size_t>(0, 256), 0u);
  EXPECT_EQ(roundUp<std::size_t>(1, 256), 256u);
  EXPECT_EQ(roundUp<std::size_t>(256, 256), 256u);
  EXPECT_EQ(roundUp<std::size_t>(257, 256), 512u);
  EXPECT_EQ(roundUp<std::int64_t>(13, 8), 16);
  static_assert(roundUp<std::int64_t>(16, 8) == 16);
}

TEST(CheckedMathTest, ElementCountsAndTensorBytesNeverWrapAround) {
  EXPECT_EQ(elementCount({2, 3, 4}), 24);
  // 2^32 * 2^32 wrapped to 0 before: a zero-sized "tensor".
  EXPECT_EQ(
      errorOf([] { elementCount({std::int64_t{1} << 32, 1 << 16, 1 << 16}); }),
      "counting the elements of shape [4294967296, 65536, 65536]: "
      "281474976710656 x 65536 overflows a 64-bit integer");
  EXPECT_EQ(errorOf([] { elementCount({4, -1}); }),
            "shape [4, -1] has a negative extent");
  // 2^62 elements fit, their f32 bytes do not.
  EXPECT_NE(errorOf([] {
              tensorBytes({std::int64_t{1} << 31, std::int64_t{1} << 31},
                          DType::F32);
            }).find("sizing a [2147483648, 2147483648] f32 tensor"),
            std::string::npos);
}

TEST(CheckedMathTest, AttentionAndLayerNormShapesRejectSizesThatOverflow) {
  AttentionShape attention{
      std::int64_t{1} << 31, std::int64_t{1} << 31, 1, 2, 2, 64};
  EXPECT_NE(errorOf([&] { attention.validate(); }).find("overflows"),
            std::string::npos);
  // Tensors that fit, whose score matrix B*H*N*M does not.
  AttentionShape scores{1, 1, 1, std::int64_t{1} << 31, std::int64_t{1} << 31,
                        1};
  EXPECT_NE(errorOf([&] {
              scores.validate();
            }).find("sizing the score matrices B*H*N*M"),
            std::string::npos);
  LayerNormShape norm{std::int64_t{1} << 40, std::int64_t{1} << 40};
  EXPECT_NE(errorOf([&] { norm.validate(); }).find("overflows"),
            std::string::npos);
}

TEST(MemoryBudgetTest, SumsItemsAndSaturatesInsteadOfWrapping) {
  MemoryBudget budget;
  budget.addDevice("q", 3 * kGiB);
  budget.addDevice("k", kGiB);
  budget.addHost("copies", 5);
  EXPECT_EQ(budget.deviceBytes(), 4 * kGiB);
  EXPECT_EQ(budget.hostBytes(), 5u);
  budget.addDevice("huge", std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(budget.deviceBytes(), std::numeric_limits<std::uint64_t>::max());
}

TEST(MemoryBudgetTest, ARequestThatDoesNotFitNamesBytesNeededItemsAndFree) {
  MemoryBudget budget;
  for (const char *name : {"a", "b", "c", "d", "e", "f"})
    budget.addDevice(name, kGiB);
  budget.addDevice("largest", 10 * kGiB);
  EXPECT_NO_THROW(budget.checkDevice("run", 16 * kGiB));
  EXPECT_EQ(errorOf([&] { budget.checkDevice("fa-run x", 8 * kGiB); }),
            "fa-run x needs 16.0 GiB of device memory (largest 10.0 GiB, a "
            "1.0 GiB, b 1.0 GiB, c 1.0 GiB, others 3.0 GiB), but 8.0 GiB is "
            "free on the GPU: use smaller sizes");
  budget.addHost("x", 2048);
  EXPECT_EQ(errorOf([&] { budget.checkHost("fa-run x", 1024); }),
            "fa-run x needs 2.0 KiB of host memory (x 2.0 KiB), but 1.0 KiB "
            "is available: use smaller sizes");
}

TEST(MemoryBudgetTest, TheHostHasSomeMemoryAvailable) {
  std::uint64_t available = availableHostMemory();
  EXPECT_GT(available, 0u);
  EXPECT_LT(available, std::uint64_t{1} << 50); // Under a pebibyte.
}

TEST(MemoryBudgetTest, FormatsByteCounts) {
  EXPECT_EQ(formatByteCount(512), "512 bytes");
  EXPECT_EQ(formatByteCount(1536), "1.5 KiB");
  EXPECT_EQ(formatByteCount(256 * kGiB + kGiB / 2), "256.5 GiB");
  EXPECT_EQ(formatByteCount(std::numeric_limits<std::uint64_t>::max()),
            "16.0 EiB");
}

} // namespace
