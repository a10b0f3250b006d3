//===- LayerNormReferenceTest.cpp - The fp64 CPU LayerNorm reference ------===//

#include "fa/runtime/LayerNormReference.h"

#include "fa/runtime/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

using namespace fa;

namespace {

std::vector<float> randomValues(std::int64_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(static_cast<std::size_t>(count));
  for (float &value : values)
    value = normal(rng);
  return values;
}

TEST(LayerNormReferenceTest, HandComputedRow) {
  // mean 2.5, biased variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25.
  LayerNormShape shape{1, 4};
  double eps = 0.75; // variance + eps = 2, so rstd = 1 / sqrt(2).
  LayerNormForwardReference result = referenceLayerNormForward(
      shape, {1, 2, 3, 4}, {1, 1, 1, 2}, {0, 0, 0, 1}, eps);
  double rstd = 1 / std::sqrt(2.0);
  EXPECT_DOUBLE_EQ(result.mean[0], 2.5);
  EXPECT_DOUBLE_EQ(result.rstd[0], rstd);
  EXPECT_DOUBLE_EQ(result.y[0], -1.5 * rstd);
  EXPECT_DOUBLE_EQ(result.y[1], -0.5 * rstd);
  EXPECT_DOUBLE_EQ(result.y[2], 0.5 * rstd);
  EXPECT_DOUBLE_EQ(result.y[3], 1.5 * rstd * 2 + 1);
}

TEST(LayerNormReferenceTest, NormalisedRowsHaveZeroMeanAndUnitVariance) {
  LayerNormShape shape{3, 50};
  std::vector<float> x = randomValues(150, 1);
  for (std::size_t i = 0; i < 50; ++i)
    x[i] = 1000 + x[i]; // A large mean must not cost accuracy.
  std::vector<float> ones(50, 1.0f), zeros(50, 0.0f);
  LayerNormForwardReference result =
      referenceLayerNormForward(shape, x, ones, zeros, 0);
  for (std::int64_t i = 0; i < 3; ++i) {
    double sum = 0, squares = 0;
    for (std::int64_t j = 0; j < 50; ++j) {
      sum += result.y[i * 50 + j];
      squares += result.y[i * 50 + j] * result.y[i * 50 + j];
    }
    EXPECT_NEAR(sum / 50, 0, 1e-12) << "row " << i;
    EXPECT_NEAR(squares / 50, 1, 1e-12) << "row " << i;
  }
  EXPECT_NEAR(result.mean[0], 1000, 1);
}

TEST(LayerNormReferenceTest, RowsOfOneElement) {
  // x - mean is 0: y is the bias, rstd 1 / sqrt(eps), dx and dweight 0.
  LayerNormShape shape{2, 1};
  LayerNormForwardReference forward =
      referenceLayerNormForward(shape, {3, -7}, {2}, {0.5}, 1e-4);
  EXPECT_DOUBLE_EQ(forward.y[0], 0.5);
  EXPECT_DOUBLE_EQ(forward.y[1], 0.5);
  EXPECT_DOUBLE_EQ(forward.rstd[0], 100);
  EXPECT_DOUBLE_EQ(forward.mean[1], -7);
  LayerNormBackwardReference backward =
      referenceLayerNormBackward(shape, {3, -7}, {2}, {1.5, 2}, 1e-4);
  EXPECT_EQ(backward.dx, (std::vector<double>{0, 0}));
  EXPECT_EQ(backward.dweight, (std::vector<double>{0}));
  EXPECT_EQ(backward.dbias, (std::vector<double>{3.5}));
}

TEST(LayerNormReferenceTest, UniformGradientPassesOnlyToBias) {
  // With weight 1, sum_j y_ij does not depend on x: dx = 0 for dy = c.
  LayerNormShape shape{4, 9};
  std::vector<float> x = randomValues(36, 2);
  std::vector<float> dy(36, 0.25f), weight(9, 1.0f);
  LayerNormBackwardReference result =
      referenceLayerNormBackward(shape, x, weight, dy, 1e-5);
  for (double dx : result.dx)
    EXPECT_NEAR(dx, 0, 1e-12);
  for (double dbias : result.dbias)
    EXPECT_DOUBLE_EQ(dbias, 1.0);
}

/// sum_ij dy_ij * y_ij, whose gradients are the backward's outputs.
double loss(const LayerNormShape &shape, const std::vector<float> &x,
            const std::vector<float> &weight, const std::vector<float> &bias,
            const std::vector<float> &dy, double eps) {
  std::vector<double> y =
      referenceLayerNormForward(shape, x, weight, bias, eps).y;
  double total = 0;
  for (std::size_t i = 0; i < y.size(); ++i)
    total += dy[i] * y[i];
  return total;
}

/// The central difference of the loss in `values[index]`, divided by the
/// step the float values actually took.
double finiteDifference(std::vector<float> &values, std::size_t index,
                        const std::function<double()> &evaluate) {
  const float original = values[index];
  values[index] = original + 1e-3f;
  double above = evaluate();
  double step = values[index];
  values[index] = original - 1e-3f;
  double below = evaluate();
  step -= values[index];
  values[index] = original;
  return (above - below) / step;
}

TEST(LayerNormReferenceTest, GradientsMatchFiniteDifferences) {
  LayerNormShape shape{3, 7};
  std::vector<float> x = randomValues(21, 3), dy = randomValues(21, 4);
  std::vector<float> weight = randomValues(7, 5), bias = randomValues(7, 6);
  const double eps = 1e-2; // Large enough to matter.
  LayerNormBackwardReference gradients =
      referenceLayerNormBackward(shape, x, weight, dy, eps);
  auto evaluate = [&] { return loss(shape, x, weight, bias, dy, eps); };
  auto expectClose = [](double analytic, double numeric, const char *what,
                        std::size_t index) {
    EXPECT_NEAR(analytic, numeric, 1e-5 * (1 + std::fabs(analytic)))
        << what << "[" << index << "]";
  };
  for (std::size_t i = 0; i < x.size(); ++i)
    expectClose(gradients.dx[i], finiteDifference(x, i, evaluate), "dx", i);
  for (std::size_t j = 0; j < weight.size(); ++j) {
    expectClose(gradients.dweight[j], finiteDifference(weight, j, evaluate),
                "dweight", j);
    expectClose(gradients.dbias[j], finiteDifference(bias, j, evaluate),
                "dbias", j);
  }
}

TEST(LayerNormReferenceTest, RejectsBadShapesAndSizes) {
  EXPECT_THROW(
      referenceLayerNormForward({0, 4}, {}, {0, 0, 0, 0}, {0, 0, 0, 0}, 1e-5),
      Error);
  try {
    referenceLayerNormBackward({2, 2}, {0, 0, 0, 0}, {1, 1}, {0, 0, 0}, 1e-5);
    FAIL() << "expected an error";
  } catch (const Error &error) {
    EXPECT_STREQ(error.what(), "computing the layernorm reference: dy has 3 "
                               "elements, expected [2, 2]");
  }
}

} // namespace
