//===- GradientSyncTest.cpp - buckets and modes of gradient averaging -----===//

#include "fa/train/GradientSync.h"

#include "fa/runtime/Error.h"

#include <gtest/gtest.h>

using namespace fa;
using namespace fa::train;

namespace {

TEST(GradientBucketsTest, CoverTheArrayFromItsEnd) {
  // 10.8M elements (the 6 x 384 model) in 25 MB buckets of f32.
  const std::int64_t total = 10848256, bucket = 25 * (1 << 20) / 4;
  std::vector<GradientBucket> buckets = gradientBuckets(total, bucket);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets.front().end, total);
  EXPECT_EQ(buckets.back().begin, 0);
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    EXPECT_EQ(buckets[i].begin % 8, 0);
    EXPECT_LE(buckets[i].end - buckets[i].begin, bucket);
    EXPECT_LT(buckets[i].begin, buckets[i].end);
    if (i + 1 < buckets.size())
      EXPECT_EQ(buckets[i + 1].end, buckets[i].begin);
  }
}

TEST(GradientBucketsTest, StartsAreAlignedWhateverTheBucketSize) {
  std::vector<GradientBucket> buckets = gradientBuckets(1000, 77);
  std::int64_t covered = 0;
  for (const GradientBucket &b : buckets) {
    EXPECT_EQ(b.begin % 8, 0);
    covered += b.end - b.begin;
  }
  EXPECT_EQ(covered, 1000);
  EXPECT_EQ(gradientBuckets(64, 1000).size(), 1u);
}

TEST(GradientBucketsTest, RejectsEmptySizes) {
  EXPECT_THROW(gradientBuckets(0, 8), Error);
  EXPECT_THROW(gradientBuckets(8, 0), Error);
}

TEST(SyncModeTest, NamesRoundTrip) {
  for (SyncMode mode :
       {SyncMode::Naive, SyncMode::Flat, SyncMode::Overlap, SyncMode::Zero1})
    EXPECT_EQ(parseSyncMode(syncModeName(mode)), mode);
  EXPECT_THROW(parseSyncMode("ring"), Error);
}

} // namespace
