//===- BenchmarkTest.cpp - Buffer rotation arithmetic ---------------------===//

#include "fa/runtime/Benchmark.h"

#include <gtest/gtest.h>

using namespace fa;

namespace {

constexpr std::size_t kMiB = 1024 * 1024;

TEST(RotationCopiesTest, SpansTwiceTheL2) {
  EXPECT_EQ(rotationCopies(10 * kMiB, 50 * kMiB, 64), 10);
  EXPECT_EQ(rotationCopies(30 * kMiB, 50 * kMiB, 64), 4); // ceil(100 / 30)
}

TEST(RotationCopiesTest, LargeSetsNeedNoCopies) {
  EXPECT_EQ(rotationCopies(100 * kMiB, 50 * kMiB, 64), 1);
  EXPECT_EQ(rotationCopies(1024 * kMiB, 50 * kMiB, 64), 1);
}

TEST(RotationCopiesTest, CappedForTinySets) {
  EXPECT_EQ(rotationCopies(1024, 50 * kMiB, 64), 64);
  EXPECT_EQ(rotationCopies(0, 50 * kMiB, 64), 1);
}

} // namespace
