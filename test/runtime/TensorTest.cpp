//===- TensorTest.cpp - random inputs
//--------------------------------------===//

#include "fa/runtime/Tensor.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace fa;

namespace {

// Several chunks of the parallel generator, and a partial last one.
const Shape kShape = {3, 1000, 1001};

TEST(RandomTensorTest, SameSeedGivesSameValues) {
  std::mt19937_64 first(42), second(42);
  EXPECT_EQ(randomTensor(kShape, DType::F32, first).values,
            randomTensor(kShape, DType::F32, second).values);
}

TEST(RandomTensorTest, DifferentSeedsAndSuccessiveDrawsDiffer) {
  std::mt19937_64 rng(42), other(43);
  HostTensor a = randomTensor(kShape, DType::F32, rng);
  HostTensor b = randomTensor(kShape, DType::F32, rng);
  HostTensor c = randomTensor(kShape, DType::F32, other);
  EXPECT_NE(a.values, b.values);
  EXPECT_NE(a.values, c.values);
}

TEST(RandomTensorTest, ValuesAreStandardNormalInEveryChunk) {
  std::mt19937_64 rng(7);
  HostTensor tensor = randomTensor(kShape, DType::F32, rng);
  ASSERT_EQ(tensor.values.size(), 3u * 1000 * 1001);
  // Per slice of 1001000 values: a repeated or zero chunk would show.
  for (std::size_t slice = 0; slice < 3; ++slice) {
    double sum = 0, squares = 0;
    for (std::size_t i = slice * 1001000; i < (slice + 1) * 1001000; ++i) {
      sum += tensor.values[i];
      squares += double(tensor.values[i]) * tensor.values[i];
    }
    EXPECT_NEAR(sum / 1001000, 0.0, 0.01);
    EXPECT_NEAR(squares / 1001000, 1.0, 0.01);
  }
}

TEST(RandomTensorTest, ValuesAreRepresentableInTheDType) {
  std::mt19937_64 rng(1);
  for (DType dtype : {DType::BF16, DType::F16}) {
    HostTensor tensor = randomTensor({4096}, dtype, rng);
    for (float value : tensor.values)
      ASSERT_EQ(value, roundToDType(value, dtype));
  }
}

} // namespace
