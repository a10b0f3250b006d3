//===- layernorm_layout_test.cpp - Which layout runs which rows -----------===//
//
// The host side of layernorm.cu picks a kernel from the row length alone; this
// checks the choice without a GPU.
//
//===----------------------------------------------------------------------===//

#include "layernorm.h"

#include <gtest/gtest.h>

namespace fa::handwritten {
namespace {

TEST(LayerNormLayout, ShortRowsShareAWarpAndLoad16Bytes) {
  RowLayout layout = forwardLayout(DType::BF16, 24);
  EXPECT_EQ(layout.name(), "group4_chunks1_vector8");
  EXPECT_EQ(layout.rowsPerBlock(), 64);
  EXPECT_EQ(forwardLayout(DType::F32, 128).name(), "group32_chunks1_vector4");
}

TEST(LayerNormLayout, RowsOfOneWarpOrMore) {
  EXPECT_EQ(forwardLayout(DType::BF16, 1024).name(), "group32_chunks4_vector8");
  EXPECT_EQ(forwardLayout(DType::BF16, 4096).name(),
            "group128_chunks4_vector8");
  EXPECT_EQ(forwardLayout(DType::BF16, 4096).rowsPerBlock(), 2);
  EXPECT_EQ(forwardLayout(DType::BF16, 8192).name(),
            "group256_chunks4_vector8");
  EXPECT_EQ(backwardLayout(DType::BF16, 1024).name(),
            "group64_chunks2_vector8");
  EXPECT_EQ(backwardLayout(DType::BF16, 8192).name(),
            "group512_chunks2_vector8");
}

TEST(LayerNormLayout, RowsOffSixteenBytesGoElementByElement) {
  EXPECT_EQ(forwardLayout(DType::BF16, 1).name(), "group4_chunks1_vector1");
  EXPECT_EQ(forwardLayout(DType::F16, 100).name(), "group32_chunks4_vector1");
  EXPECT_EQ(backwardLayout(DType::F32, 1001).name(),
            "group512_chunks2_vector1");
}

TEST(LayerNormLayout, LongRowsLoop) {
  EXPECT_EQ(forwardLayout(DType::BF16, 32768).name(),
            "group1024_chunks4_vector8");
  EXPECT_FALSE(forwardLayout(DType::BF16, 65536).resident);
  EXPECT_EQ(forwardLayout(DType::F32, 65536).name(), "loop_vector4");
  EXPECT_FALSE(backwardLayout(DType::BF16, 16384).resident);
  EXPECT_EQ(backwardLayout(DType::F32, 100003).name(), "loop_vector1");
}

TEST(LayerNormLayout, EveryResidentLayoutHoldsItsRow) {
  for (DType dtype : {DType::BF16, DType::F16, DType::F32})
    for (std::int64_t cols = 1; cols <= 40000; cols += cols < 64 ? 1 : 61)
      for (const RowLayout &layout :
           {forwardLayout(dtype, cols), backwardLayout(dtype, cols)}) {
        if (!layout.resident)
          continue;
        EXPECT_GE(layout.capacity(), cols) << layout.name();
        EXPECT_EQ(cols % layout.vector, 0) << layout.name();
        EXPECT_EQ(layout.blockThreads % layout.groupThreads, 0);
      }
}

} // namespace
} // namespace fa::handwritten
