//===- AttentionReferenceTesting.h - Inputs and checks of references -*- C++
//-*-===//
//
// What the attention reference tests share: reproducible inputs, the scalar
// loss whose derivatives the backward references compute, the finite-
// difference check of those gradients, and a kernel spec with extra
// parameters for binding tests.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TEST_RUNTIME_ATTENTIONREFERENCETESTING_H
#define FA_TEST_RUNTIME_ATTENTIONREFERENCETESTING_H

#include "fa/runtime/AttentionVariant.h"
#include "fa/runtime/KernelLibrary.h"
#include "fa/runtime/Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace fa::reftest {

/// Standard normal values, the same for the same seed on every platform's
/// libstdc++ (mt19937 is specified; normal_distribution is libstdc++'s).
inline std::vector<float> randomValues(const Shape &shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(static_cast<std::size_t>(elementCount(shape)));
  for (float &value : values)
    value = normal(rng);
  return values;
}

/// Values on a 1/64 grid, so that input +- 2^-10 is exact in float.
inline std::vector<float> gridValues(const Shape &shape, unsigned seed) {
  std::vector<float> values = randomValues(shape, seed);
  for (float &value : values)
    value = std::round(value * 64) / 64;
  return values;
}

/// sum(dout * out) of the reference forward: the loss whose gradients
/// referenceAttentionGradCpu computes for this dout.
inline double attentionLoss(const AttentionShape &shape,
                            const std::vector<float> &q,
                            const std::vector<float> &k,
                            const std::vector<float> &v,
                            const std::vector<float> &dout, double scale,
                            const AttentionVariant &variant) {
  AttentionReference forward =
      referenceAttentionCpu(shape, q, k, v, scale, variant);
  double sum = 0;
  for (std::size_t i = 0; i < forward.out.size(); ++i)
    sum += forward.out[i] * dout[i];
  return sum;
}

/// Expects each gradient of the reference's loss to match central
/// differences of it, on grid inputs drawn from `seed`: q, k, v and, when the
/// variant has sinks, the sinks (otherwise dsinks must be empty).
inline void expectGradientsMatchFiniteDifferences(const AttentionShape &shape,
                                                  AttentionVariant variant,
                                                  unsigned seed) {
  std::vector<float> q = gridValues(shape.query(), seed);
  std::vector<float> k = gridValues(shape.keyValue(), seed + 1);
  std::vector<float> v = gridValues(shape.keyValue(), seed + 2);
  std::vector<float> dout = gridValues(shape.query(), seed + 3);
  const double scale = 0.9;
  AttentionGradReference gradients =
      referenceAttentionGradCpu(shape, q, k, v, dout, scale, variant);
  const float step = 1.0f / 1024;
  auto check = [&](std::vector<float> &input, const std::vector<double> &grad,
                   const char *name) {
    ASSERT_EQ(input.size(), grad.size()) << name;
    for (std::size_t i = 0; i < input.size(); ++i) {
      float saved = input[i];
      input[i] = saved + step;
      double up = attentionLoss(shape, q, k, v, dout, scale, variant);
      input[i] = saved - step;
      double down = attentionLoss(shape, q, k, v, dout, scale, variant);
      input[i] = saved;
      EXPECT_NEAR(grad[i], (up - down) / (2 * step), 2e-5)
          << name << "[" << i << "]";
    }
  };
  check(q, gradients.dq, "dq");
  check(k, gradients.dk, "dk");
  check(v, gradients.dv, "dv");
  if (!variant.sinks.empty())
    check(variant.sinks, gradients.dsinks, "dsinks");
  else
    EXPECT_TRUE(gradients.dsinks.empty());
}

/// A bf16 head_dim 64 forward kernel spec called `name`, with the attention
/// tensors and `extra` parameters.
inline KernelSpec kernelTaking(const std::string &name,
                               std::vector<KernelParam> extra) {
  KernelSpec spec;
  spec.name = name;
  for (const char *tensor : {"q", "k", "v", "out"})
    spec.params.push_back({tensor, ParamKind::Memref, DType::BF16, 4});
  spec.params.push_back({"lse", ParamKind::Memref, DType::F32, 3});
  spec.params.insert(spec.params.end(), extra.begin(), extra.end());
  return spec;
}

} // namespace fa::reftest

#endif // FA_TEST_RUNTIME_ATTENTIONREFERENCETESTING_H
