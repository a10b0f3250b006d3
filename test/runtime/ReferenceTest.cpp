//===- ReferenceTest.cpp - The fp64 CPU attention references --------------===//

#include "fa/runtime/Reference.h"
#include "fa/runtime/Error.h"

#include "AttentionReferenceTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

using namespace fa;
using fa::reftest::randomValues;

namespace {

TEST(ReferenceTest, HandComputedCase) {
  // One query, two keys, head_dim 1, scale 1: scores 0 and ln 3, so the
  // softmax weights are 1/4 and 3/4.
  AttentionShape shape{1, 1, 1, 1, 2, 1};
  AttentionReference result = referenceAttentionCpu(
      shape, {1.0f}, {0.0f, static_cast<float>(std::log(3.0))}, {1.0f, 5.0f},
      1.0, false);
  EXPECT_NEAR(result.out[0], 0.25 * 1 + 0.75 * 5, 1e-7);
  EXPECT_NEAR(result.lse[0], std::log(4.0), 1e-7);
}

TEST(ReferenceTest, CausalIsTopLeftAligned) {
  // Row 0 sees key 0 only; row 1 sees keys 0 and 1.
  AttentionShape shape{1, 1, 1, 2, 2, 1};
  std::vector<float> q = {2.0f, 1.0f}, k = {1.0f, 0.0f}, v = {10.0f, 20.0f};
  AttentionReference causal = referenceAttentionCpu(shape, q, k, v, 1.0, true);
  EXPECT_DOUBLE_EQ(causal.out[0], 10.0);
  EXPECT_DOUBLE_EQ(causal.lse[0], 2.0);
  double weight0 = std::exp(1.0) / (std::exp(1.0) + 1.0);
  EXPECT_NEAR(causal.out[1], weight0 * 10 + (1 - weight0) * 20, 1e-12);
  EXPECT_NEAR(causal.lse[1], std::log(std::exp(1.0) + 1.0), 1e-12);
}

TEST(ReferenceTest, UniformKeysAverageTheVisibleValues) {
  AttentionShape shape{1, 2, 2, 5, 5, 4};
  std::vector<float> q = randomValues(shape.query(), 1);
  std::vector<float> k(static_cast<std::size_t>(elementCount(shape.keyValue())),
                       0.5f);
  std::vector<float> v = randomValues(shape.keyValue(), 2);
  double scale = 0.5;
  AttentionReference result =
      referenceAttentionCpu(shape, q, k, v, scale, true);
  for (std::int64_t h = 0; h < 2; ++h)
    for (std::int64_t i = 0; i < 5; ++i) {
      std::int64_t row = h * 5 + i;
      double score = 0;
      for (int d = 0; d < 4; ++d)
        score += scale * q[row * 4 + d] * 0.5;
      EXPECT_NEAR(result.lse[row], score + std::log(i + 1.0), 1e-12);
      for (int d = 0; d < 4; ++d) {
        double mean = 0;
        for (std::int64_t j = 0; j <= i; ++j)
          mean += v[(h * 5 + j) * 4 + d] / (i + 1.0);
        EXPECT_NEAR(result.out[row * 4 + d], mean, 1e-12);
      }
    }
}

TEST(ReferenceTest, GroupedQueryAttentionSharesKeyValueHeads) {
  // heads=4 over kv_heads=2 equals multi-head attention with each kv head
  // repeated for its group of two query heads.
  AttentionShape grouped{2, 4, 2, 3, 6, 8};
  std::vector<float> q = randomValues(grouped.query(), 3);
  std::vector<float> k = randomValues(grouped.keyValue(), 4);
  std::vector<float> v = randomValues(grouped.keyValue(), 5);
  AttentionShape repeated = grouped;
  repeated.kvHeads = 4;
  std::vector<float> kRepeated, vRepeated;
  std::int64_t headElements = grouped.seqKv * grouped.headDim;
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t h = 0; h < 4; ++h) {
      std::int64_t from = (b * 2 + h / 2) * headElements;
      kRepeated.insert(kRepeated.end(), k.begin() + from,
                       k.begin() + from + headElements);
      vRepeated.insert(vRepeated.end(), v.begin() + from,
                       v.begin() + from + headElements);
    }
  for (bool causal : {false, true}) {
    AttentionReference a = referenceAttentionCpu(grouped, q, k, v, 0.3, causal);
    AttentionReference b =
        referenceAttentionCpu(repeated, q, kRepeated, vRepeated, 0.3, causal);
    EXPECT_EQ(a.out, b.out);
    EXPECT_EQ(a.lse, b.lse);
  }
}

TEST(ReferenceTest, CausalRowsPastTheLastKeySeeEveryKey) {
  // seq_q > seq_kv: rows i >= seq_kv - 1 see all keys, as without a mask.
  AttentionShape shape{1, 1, 1, 6, 3, 4};
  std::vector<float> q = randomValues(shape.query(), 6);
  std::vector<float> k = randomValues(shape.keyValue(), 7);
  std::vector<float> v = randomValues(shape.keyValue(), 8);
  AttentionReference causal = referenceAttentionCpu(shape, q, k, v, 0.5, true);
  AttentionReference full = referenceAttentionCpu(shape, q, k, v, 0.5, false);
  for (std::int64_t i = 2; i < 6; ++i)
    EXPECT_EQ(causal.lse[i], full.lse[i]) << "row " << i;
  EXPECT_NE(causal.lse[0], full.lse[0]);
}

TEST(ReferenceTest, RejectsBadShapesAndSizes) {
  AttentionShape shape{1, 3, 2, 1, 1, 1};
  EXPECT_THROW(
      referenceAttentionCpu(shape, {0, 0, 0}, {0, 0}, {0, 0}, 1, false), Error);
  AttentionShape ok{1, 1, 1, 2, 2, 1};
  try {
    referenceAttentionCpu(ok, {0}, {0, 0}, {0, 0}, 1, false);
    FAIL() << "expected an error";
  } catch (const Error &error) {
    EXPECT_STREQ(error.what(), "computing the attention reference: q has 1 "
                               "elements, expected [1, 1, 2, 1]");
  }
}

/// sum(dout * out), whose gradients in q, k and v are the backward's.
double loss(const AttentionShape &shape, const std::vector<float> &q,
            const std::vector<float> &k, const std::vector<float> &v,
            const std::vector<float> &dout, double scale, bool causal) {
  std::vector<double> out =
      referenceAttentionCpu(shape, q, k, v, scale, causal).out;
  double total = 0;
  for (std::size_t i = 0; i < out.size(); ++i)
    total += dout[i] * out[i];
  return total;
}

/// The central difference of `evaluate` in `values[index]`, divided by the
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

struct GradCase {
  const char *name;
  AttentionShape shape;
  bool causal;
};

class AttentionGradReferenceTest : public testing::TestWithParam<GradCase> {};

TEST_P(AttentionGradReferenceTest, GradientsMatchFiniteDifferences) {
  const AttentionShape &shape = GetParam().shape;
  const bool causal = GetParam().causal;
  const double scale = 0.7;
  std::vector<float> q = randomValues(shape.query(), 11);
  std::vector<float> k = randomValues(shape.keyValue(), 12);
  std::vector<float> v = randomValues(shape.keyValue(), 13);
  std::vector<float> dout = randomValues(shape.query(), 14);
  AttentionGradReference gradients =
      referenceAttentionGradCpu(shape, q, k, v, dout, scale, causal);
  auto evaluate = [&] { return loss(shape, q, k, v, dout, scale, causal); };
  auto expectDerivatives = [&](std::vector<float> &input,
                               const std::vector<double> &analytic,
                               const char *what) {
    ASSERT_EQ(analytic.size(), input.size()) << what;
    for (std::size_t i = 0; i < input.size(); ++i)
      EXPECT_NEAR(analytic[i], finiteDifference(input, i, evaluate),
                  1e-5 * (1 + std::fabs(analytic[i])))
          << what << "[" << i << "]";
  };
  expectDerivatives(q, gradients.dq, "dq");
  expectDerivatives(k, gradients.dk, "dk");
  expectDerivatives(v, gradients.dv, "dv");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionGradReferenceTest,
    testing::Values(GradCase{"Square", {1, 2, 2, 4, 4, 3}, false},
                    GradCase{"SquareCausal", {1, 2, 2, 4, 4, 3}, true},
                    // Grouped heads: dk and dv sum over the two query heads of
                    // each kv head.
                    GradCase{"GroupedCausal", {2, 4, 2, 3, 3, 2}, true},
                    GradCase{"MoreKeysCausal", {1, 2, 1, 3, 5, 2}, true},
                    GradCase{"MoreQueriesCausal", {1, 1, 1, 5, 3, 2}, true},
                    GradCase{"Cross", {1, 3, 1, 2, 6, 4}, false},
                    GradCase{"OneQueryOneKey", {1, 1, 1, 1, 1, 4}, false}),
    [](const testing::TestParamInfo<GradCase> &info) {
      return info.param.name;
    });

TEST(AttentionGradReferenceTest, KeysNoQuerySeesGetZeroGradients) {
  // Causal with seq_q 2 < seq_kv 5: keys 2, 3 and 4 are never seen.
  AttentionShape shape{1, 2, 1, 2, 5, 3};
  AttentionGradReference gradients = referenceAttentionGradCpu(
      shape, randomValues(shape.query(), 1), randomValues(shape.keyValue(), 2),
      randomValues(shape.keyValue(), 3), randomValues(shape.query(), 4), 0.5,
      true);
  for (std::int64_t j = 0; j < 5; ++j)
    for (std::int64_t d = 0; d < 3; ++d) {
      bool seen = j < 2;
      EXPECT_EQ(gradients.dk[j * 3 + d] != 0, seen) << "dk key " << j;
      EXPECT_EQ(gradients.dv[j * 3 + d] != 0, seen) << "dv key " << j;
    }
}

TEST(AttentionGradReferenceTest, OneKeyPassesNoGradientToQueriesOrKeys) {
  // A single key gets weight 1 whatever q and k are: dq = dk = 0, dv = dout.
  AttentionShape shape{1, 1, 1, 1, 1, 4};
  std::vector<float> dout = randomValues(shape.query(), 5);
  AttentionGradReference gradients = referenceAttentionGradCpu(
      shape, randomValues(shape.query(), 6), randomValues(shape.keyValue(), 7),
      randomValues(shape.keyValue(), 8), dout, 0.5, false);
  for (std::size_t d = 0; d < 4; ++d) {
    EXPECT_DOUBLE_EQ(gradients.dq[d], 0);
    EXPECT_DOUBLE_EQ(gradients.dk[d], 0);
    EXPECT_DOUBLE_EQ(gradients.dv[d], dout[d]);
  }
}

TEST(AttentionGradReferenceTest, RejectsBadSizes) {
  AttentionShape shape{1, 1, 1, 2, 2, 1};
  try {
    referenceAttentionGradCpu(shape, {0, 0}, {0, 0}, {0, 0}, {0}, 1, false);
    FAIL() << "expected an error";
  } catch (const Error &error) {
    EXPECT_STREQ(error.what(), "computing the attention gradient reference: "
                               "dout has 1 elements, expected [1, 1, 2, 1]");
  }
  EXPECT_THROW(referenceAttentionGradCpu({1, 3, 2, 1, 1, 1}, {0, 0, 0}, {0, 0},
                                         {0, 0}, {0, 0, 0}, 1, false),
               Error);
}

} // namespace
