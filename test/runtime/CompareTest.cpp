//===- CompareTest.cpp - Error statistics against a reference -------------===//

#include "fa/runtime/Compare.h"
#include "fa/runtime/Error.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace fa;

namespace {

TEST(CompareTest, ExactMatchHasNoError) {
  ErrorStats stats = compareWithReference({1, 2, 3}, {1, 2, 3});
  EXPECT_EQ(stats.maxAbs, 0);
  EXPECT_EQ(stats.relative, 0);
  EXPECT_EQ(stats.nanCount, 0);
  EXPECT_EQ(stats.count, 3);
  EXPECT_TRUE(stats.passes(0));
}

TEST(CompareTest, MaxAbsAndFrobeniusRelativeError) {
  // Errors (0, 0.5, -1) against a reference of norm 5.
  ErrorStats stats = compareWithReference({3, 4.5f, -1}, {3, 4, 0});
  EXPECT_DOUBLE_EQ(stats.maxAbs, 1);
  EXPECT_DOUBLE_EQ(stats.relative, std::sqrt(1.25) / 5);
  EXPECT_TRUE(stats.passes(0.3));
  EXPECT_FALSE(stats.passes(0.2));
}

TEST(CompareTest, NaNsAreCountedAndFail) {
  ErrorStats stats = compareWithReference({1, std::nanf(""), 3}, {1, 2, 3});
  EXPECT_EQ(stats.nanCount, 1);
  EXPECT_EQ(stats.relative, 0); // Over the elements that were written.
  EXPECT_FALSE(stats.passes(1));
}

TEST(CompareTest, InfinityFails) {
  ErrorStats stats = compareWithReference({INFINITY}, {1});
  EXPECT_FALSE(stats.passes(1e9));
}

TEST(CompareTest, MatchingInfinitiesAreExact) {
  // The lse of fully masked rows: -inf in the kernel and the reference.
  ErrorStats stats = compareWithReference({-INFINITY, 2}, {-INFINITY, 2});
  EXPECT_EQ(stats.relative, 0);
  EXPECT_EQ(stats.maxAbs, 0);
  EXPECT_TRUE(stats.passes(0));
  // On one side only it is an infinite error.
  EXPECT_FALSE(compareWithReference({-3, 2}, {-INFINITY, 2}).passes(1e9));
  EXPECT_FALSE(compareWithReference({-INFINITY, 2}, {-3, 2}).passes(1e9));
  EXPECT_FALSE(compareWithReference({INFINITY}, {-INFINITY}).passes(1e9));
}

TEST(CompareTest, ZeroReferenceUsesTheAbsoluteNorm) {
  EXPECT_DOUBLE_EQ(compareWithReference({0, 0.5f}, {0, 0}).relative, 0.5);
}

TEST(CompareTest, SizesMustMatch) {
  EXPECT_THROW(compareWithReference({1}, {1, 2}), Error);
}

} // namespace
