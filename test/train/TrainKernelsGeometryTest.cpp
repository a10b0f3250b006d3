//===- TrainKernelsGeometryTest.cpp - The training kernels' grids ---------===//
//
// The grids TrainKernels launches (TrainKernelsGeometry.h), without a GPU:
// every element is covered, the launch limits hold and the reductions' splits
// depend on the sizes alone.
//
//===----------------------------------------------------------------------===//

#include "TrainKernelsGeometry.h"

#include "fa/train/TrainKernels.h"

#include <gtest/gtest.h>

using namespace fa::train::geometry;
using fa::train::TrainKernels;

namespace {

TEST(TrainKernelsGeometryTest, ElementwiseGridsCapTheirBlocks) {
  EXPECT_EQ(elementwiseBlocks(1), 1);
  EXPECT_EQ(elementwiseBlocks(256), 1);
  EXPECT_EQ(elementwiseBlocks(257), 2);
  EXPECT_EQ(elementwiseBlocks(std::int64_t{1} << 40), kMaxElementwiseBlocks);
  EXPECT_LE(kMaxElementwiseBlocks, kMaxGridX);
}

TEST(TrainKernelsGeometryTest, RowGrids) {
  EXPECT_EQ(channelChunks(300), 2);
  EXPECT_EQ(channelChunks(256), 1);
  EXPECT_EQ(crossEntropyBlocks(37), 37);
  EXPECT_EQ(kBiasColumns * kBiasRowLanes, kBlockThreads);
}

TEST(TrainKernelsGeometryTest, BiasSpansCoverTheRowsAndFitThePartials) {
  EXPECT_EQ(biasRowBlocks(37, 300), 1);
  EXPECT_EQ(biasRowSpan(37, 300), 37);
  EXPECT_EQ(biasRowBlocks(5000, 300), 79);
  EXPECT_EQ(biasRowSpan(5000, 300), 64);
  EXPECT_EQ(biasRowBlocks(100000, 33), kBiasMaxRowBlocks);
  EXPECT_EQ(biasRowSpan(100000, 33), 782);
  EXPECT_EQ(biasRowBlocks(0, 5), 1);
  EXPECT_EQ(biasRowSpan(0, 5), 0);
  // Wide rows get fewer spans, so the partials fit.
  EXPECT_EQ(biasRowBlocks(1000000, 20000), kBiasPartialFloats / 20000);
  EXPECT_EQ(biasRowBlocks(1000000, kBiasPartialFloats), 1);
  for (std::int64_t rows : {1, 63, 64, 65, 8200, 16384, 1000000})
    for (std::int64_t cols : {1, 33, 384, 3072, 50000}) {
      const std::int64_t spans = biasRowBlocks(rows, cols);
      const std::int64_t span = biasRowSpan(rows, cols);
      EXPECT_GE(spans * span, rows) << rows << " x " << cols;
      EXPECT_LE(spans * cols, kBiasPartialFloats) << rows << " x " << cols;
      EXPECT_LE(spans, kMaxGridY);
    }
}

TEST(TrainKernelsGeometryTest, ReductionSpansCoverTheValues) {
  EXPECT_EQ(reductionBlocks(0), 1);
  EXPECT_EQ(reductionSpan(0), 0);
  EXPECT_EQ(reductionBlocks(4096), 1);
  EXPECT_EQ(reductionBlocks(4097), 2);
  EXPECT_EQ(reductionSpan(4097), 2049);
  EXPECT_EQ(reductionBlocks(std::int64_t{1} << 40), kMaxReductionBlocks);
  for (std::int64_t n : {1, 300, 4097, 5000003, 86000000}) {
    const std::int64_t blocks = reductionBlocks(n), span = reductionSpan(n);
    EXPECT_GE(blocks * span, n) << n;
    EXPECT_LT((blocks - 1) * span, n) << n << ": a block would sum nothing";
    EXPECT_EQ(TrainKernels::reductionWorkspaceFloats(n), blocks) << n;
  }
}

} // namespace
