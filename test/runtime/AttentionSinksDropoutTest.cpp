//===- AttentionSinksDropoutTest.cpp - Sinks and dropout's references -----===//
//
// The fp64 references of attention sinks and attention dropout
// (AttentionVariant.h) against computations written here from the contract:
// sinks as an extra key of zero value (the plain reference on augmented
// inputs), dsinks and the other gradients by finite differences of the
// reference's loss, dropout against Philox.h's mask applied by hand and its
// gradients by finite differences at the fixed mask; and how their values
// reach the kernels (names, kinds, bits).
//
//===----------------------------------------------------------------------===//

#include "fa/runtime/AttentionVariant.h"
#include "fa/runtime/Philox.h"
#include "fa/runtime/Reference.h"

#include "../ErrorTesting.h"
#include "AttentionReferenceTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace fa;
using fa::errortest::errorOf;
using fa::reftest::gridValues;
using fa::reftest::randomValues;

namespace {

void expectClose(const std::vector<double> &actual,
                 const std::vector<double> &expected, double tolerance,
                 const char *what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], tolerance) << what << "[" << i << "]";
}

TEST(AttentionSinksReferenceTest, SinkIsAnExtraKeyWithZeroValue) {
  // The plain reference on augmented inputs: a last dimension that is 1 in
  // every query and 0 in every key, and one more key per head, zero but for
  // sinks[h] / scale in that dimension, with a zero value. Its score is
  // sinks[h], and it adds exp(sinks[h]) to every row's denominator and
  // nothing to the output. (Heads == kv heads: each head its own extra key;
  // scale 0.5 keeps sinks[h] / scale exact.)
  const AttentionShape shape{2, 3, 3, 5, 7, 4};
  const double scale = 0.5;
  std::vector<float> q = randomValues(shape.query(), 1);
  std::vector<float> k = randomValues(shape.keyValue(), 2);
  std::vector<float> v = randomValues(shape.keyValue(), 3);
  AttentionVariant sinks;
  sinks.sinks = {0.25f, -1.5f, 2.75f};

  const std::int64_t D = shape.headDim, E = D + 1, M = shape.seqKv + 1;
  AttentionShape augmented{shape.batch, shape.heads, shape.kvHeads,
                           shape.seqQ,  M,           E};
  std::vector<float> qa, ka, va;
  for (std::int64_t row = 0; row < elementCount(shape.logSumExp()); ++row) {
    qa.insert(qa.end(), q.begin() + row * D, q.begin() + (row + 1) * D);
    qa.push_back(1.0f);
  }
  for (std::int64_t b = 0; b < shape.batch; ++b)
    for (std::int64_t h = 0; h < shape.kvHeads; ++h) {
      std::int64_t rows = (b * shape.kvHeads + h) * shape.seqKv;
      for (std::int64_t j = 0; j < shape.seqKv; ++j) {
        ka.insert(ka.end(), k.begin() + (rows + j) * D,
                  k.begin() + (rows + j + 1) * D);
        ka.push_back(0.0f);
        va.insert(va.end(), v.begin() + (rows + j) * D,
                  v.begin() + (rows + j + 1) * D);
        va.push_back(0.0f);
      }
      ka.insert(ka.end(), D, 0.0f);
      ka.push_back(static_cast<float>(sinks.sinks[h] / scale));
      va.insert(va.end(), E, 0.0f);
    }
  AttentionReference expected =
      referenceAttentionCpu(augmented, qa, ka, va, scale, false);
  AttentionReference reference =
      referenceAttentionCpu(shape, q, k, v, scale, sinks);
  expectClose(reference.lse, expected.lse, 1e-12, "lse");
  ASSERT_EQ(reference.out.size() / D, expected.out.size() / E);
  for (std::size_t row = 0; row < reference.out.size() / D; ++row)
    for (std::int64_t d = 0; d < D; ++d)
      EXPECT_NEAR(reference.out[row * D + d], expected.out[row * E + d], 1e-12)
          << "out row " << row << " dim " << d;
}

TEST(AttentionSinksReferenceTest, RowsThatKeepNoKeyHaveTheSinkAsLse) {
  // Bottom-right causal with more queries than keys: rows 0 and 1 keep no
  // key. Their out is 0 and lse the sink, finite; they have no gradient.
  const AttentionShape shape{1, 2, 1, 4, 2, 4};
  std::vector<float> q = randomValues(shape.query(), 4);
  std::vector<float> k = randomValues(shape.keyValue(), 5);
  std::vector<float> v = randomValues(shape.keyValue(), 6);
  std::vector<float> dout = randomValues(shape.query(), 7);
  AttentionVariant variant;
  variant.causal = CausalAlignment::BottomRight;
  variant.sinks = {1.25f, -0.5f};
  AttentionReference forward =
      referenceAttentionCpu(shape, q, k, v, 0.5, variant);
  for (std::int64_t h = 0; h < 2; ++h)
    for (std::int64_t i : {0, 1}) {
      std::int64_t row = h * 4 + i;
      EXPECT_EQ(forward.lse[row], variant.sinks[h]);
      for (std::int64_t d = 0; d < 4; ++d)
        EXPECT_EQ(forward.out[row * 4 + d], 0.0);
    }
  AttentionGradReference gradients =
      referenceAttentionGradCpu(shape, q, k, v, dout, 0.5, variant);
  ASSERT_EQ(gradients.dsinks.size(), 2u);
  for (double value : gradients.dsinks)
    EXPECT_TRUE(std::isfinite(value) && value != 0);
  for (std::int64_t d = 0; d < 8; ++d)
    EXPECT_EQ(gradients.dq[d], 0.0); // Head 0, rows 0 and 1.
}

TEST(AttentionSinksReferenceTest, GradientsAndDsinksMatchFiniteDifferences) {
  // GQA, a window and top-left causal (row 0 keeps one key), softcap
  // (its derivative still applies), and sinks near the rows' scores.
  const AttentionShape shape{2, 2, 1, 5, 6, 3};
  AttentionVariant variant;
  variant.causal = CausalAlignment::TopLeft;
  variant.window = AttentionWindow{2, 0};
  variant.softcap = 1.5f;
  variant.sinks = {0.5f, -0.25f};
  reftest::expectGradientsMatchFiniteDifferences(shape, variant, 11);
}

TEST(AttentionSinksReferenceTest, PlainRowsWithoutMaskGetDsinksToo) {
  const AttentionShape shape{1, 3, 3, 4, 4, 2};
  AttentionVariant variant;
  variant.sinks = {1.0f, 0.0f, -1.0f};
  reftest::expectGradientsMatchFiniteDifferences(shape, variant, 21);
}

/// Z for (b, h, i, j) from Philox.h directly: 0 or 1 / (1 - p) (f32).
double philoxFactor(const AttentionDropout &dropout, const AttentionShape &s,
                    std::int64_t b, std::int64_t h, std::int64_t i,
                    std::int64_t j) {
  DropoutPosition position{
      static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(h),
      static_cast<std::uint32_t>(s.heads), static_cast<std::uint32_t>(i),
      static_cast<std::uint32_t>(j)};
  return dropoutKeep(dropout.seed, dropout.offset, position, dropout.p)
             ? static_cast<double>(1.0f / (1.0f - dropout.p))
             : 0.0;
}

TEST(AttentionDropoutReferenceTest, OutIsTheSoftmaxTimesPhiloxsMask) {
  // out_i = sum_j P_ij Z_ij v_j with P the undropped softmax (whose lse is
  // the plain one), Z from Philox.h; GQA, so h counts query heads.
  const AttentionShape shape{2, 4, 2, 6, 9, 3};
  std::vector<float> q = randomValues(shape.query(), 31);
  std::vector<float> k = randomValues(shape.keyValue(), 32);
  std::vector<float> v = randomValues(shape.keyValue(), 33);
  const double scale = 0.7;
  AttentionVariant variant;
  variant.causal = CausalAlignment::TopLeft;
  variant.dropout = AttentionDropout{0.4f, 0x0123456789abcdefULL, 77};
  AttentionReference reference =
      referenceAttentionCpu(shape, q, k, v, scale, variant);
  AttentionReference plain =
      referenceAttentionCpu(shape, q, k, v, scale, /*causal=*/true);
  expectClose(reference.lse, plain.lse, 0, "lse");

  const std::int64_t D = shape.headDim;
  std::vector<double> expected(reference.out.size(), 0);
  int dropped = 0, kept = 0;
  for (std::int64_t b = 0; b < shape.batch; ++b)
    for (std::int64_t h = 0; h < shape.heads; ++h) {
      std::int64_t kv = b * shape.kvHeads + shape.kvHeadOf(h);
      for (std::int64_t i = 0; i < shape.seqQ; ++i) {
        std::int64_t row = (b * shape.heads + h) * shape.seqQ + i;
        for (std::int64_t j = 0; j <= i; ++j) {
          double s = 0;
          for (std::int64_t d = 0; d < D; ++d)
            s += double(q[row * D + d]) * k[(kv * shape.seqKv + j) * D + d];
          double z = philoxFactor(*variant.dropout, shape, b, h, i, j);
          (z == 0 ? dropped : kept) += 1;
          double weight = std::exp(scale * s - plain.lse[row]) * z;
          for (std::int64_t d = 0; d < D; ++d)
            expected[row * D + d] += weight * v[(kv * shape.seqKv + j) * D + d];
        }
      }
    }
  expectClose(reference.out, expected, 1e-12, "out");
  // p = 0.4 over 168 kept pairs: both kinds occur.
  EXPECT_GT(dropped, 30);
  EXPECT_GT(kept, 60);
}

TEST(AttentionDropoutReferenceTest, PZeroIsPlainAttention) {
  const AttentionShape shape{1, 2, 2, 5, 5, 4};
  std::vector<float> q = randomValues(shape.query(), 41);
  std::vector<float> k = randomValues(shape.keyValue(), 42);
  std::vector<float> v = randomValues(shape.keyValue(), 43);
  std::vector<float> dout = randomValues(shape.query(), 44);
  AttentionVariant variant;
  variant.dropout = AttentionDropout{0.0f, 5, 0};
  EXPECT_EQ(referenceAttentionCpu(shape, q, k, v, 0.5, variant).out,
            referenceAttentionCpu(shape, q, k, v, 0.5, false).out);
  EXPECT_EQ(referenceAttentionGradCpu(shape, q, k, v, dout, 0.5, variant).dk,
            referenceAttentionGradCpu(shape, q, k, v, dout, 0.5, false).dk);
}

TEST(AttentionDropoutReferenceTest, SeedAndOffsetChangeTheOutput) {
  const AttentionShape shape{1, 2, 2, 8, 8, 4};
  std::vector<float> q = randomValues(shape.query(), 45);
  std::vector<float> k = randomValues(shape.keyValue(), 46);
  std::vector<float> v = randomValues(shape.keyValue(), 47);
  AttentionVariant variant;
  variant.dropout = AttentionDropout{0.5f, 1, 0};
  auto out = [&] {
    return referenceAttentionCpu(shape, q, k, v, 0.5, variant).out;
  };
  std::vector<double> first = out();
  EXPECT_EQ(out(), first); // Deterministic.
  variant.dropout->seed = 2;
  EXPECT_NE(out(), first);
  variant.dropout->seed = 1;
  variant.dropout->offset = 1;
  EXPECT_NE(out(), first);
}

TEST(AttentionDropoutReferenceTest, GradientsMatchFiniteDifferencesAtTheMask) {
  // The mask depends on positions only, so the loss is smooth in q, k and v
  // at a fixed (seed, offset): its differences check dP = Z dO . v, dV =
  // (P Z)^T dO and delta = dO . out. With GQA, a window and softcap.
  const AttentionShape shape{1, 2, 1, 5, 6, 3};
  AttentionVariant variant;
  variant.window = AttentionWindow{2, 1};
  variant.softcap = 2.0f;
  variant.dropout = AttentionDropout{0.3f, 1234, 5};
  reftest::expectGradientsMatchFiniteDifferences(shape, variant, 51);
}

TEST(AttentionDropoutReferenceTest, SinksWithDropout) {
  const AttentionShape shape{1, 2, 2, 4, 5, 2};
  AttentionVariant variant;
  variant.sinks = {0.75f, -0.5f};
  variant.dropout = AttentionDropout{0.5f, 99, 3};
  EXPECT_EQ(variant.name(), "sinks+dropout");
  reftest::expectGradientsMatchFiniteDifferences(shape, variant, 61);
}

TEST(AttentionSinksDropoutVariantTest, NamesValuesAndDescriptions) {
  AttentionShape shape{1, 2, 2, 8, 8, 64};
  AttentionVariant variant;
  variant.window = AttentionWindow{4, 0};
  variant.sinks = {0.5f, 1.5f};
  variant.sinksSource = "s.npy";
  EXPECT_EQ(variant.name(), "window+sinks");
  variant.softcap = 30.0f;
  variant.dropout = AttentionDropout{0.25f, 7, 3};
  EXPECT_EQ(variant.name(), "window+softcap+sinks+dropout");
  EXPECT_TRUE(isNamedVariant("window+softcap+sinks+dropout"));
  EXPECT_TRUE(isNamedVariant("softcap+dropout"));
  EXPECT_EQ(variant.describe(), "window=(4, 0) softcap=30 sinks=s.npy "
                                "dropout=(p 0.25, seed 7, offset 3)");
  // Neither changes which pairs are kept, nor the FLOPs counted.
  AttentionVariant window;
  window.window = AttentionWindow{4, 0};
  EXPECT_EQ(variant.keptPairs(shape), window.keptPairs(shape));

  std::string where = "attention variant window+softcap+sinks+dropout on " +
                      shape.describe() + ": ";
  variant.dropout->p = 1.0f;
  EXPECT_EQ(errorOf([&] { variant.validate(shape); }),
            where + "dropout p must be in [0, 1), got 1");
  variant.dropout->p = -0.5f;
  EXPECT_EQ(errorOf([&] { variant.validate(shape); }),
            where + "dropout p must be in [0, 1), got -0.5");
  variant.dropout->p = 0.25f;
  variant.sinks = {0.5f};
  EXPECT_EQ(errorOf([&] { variant.validate(shape); }),
            where + "sinks need one logit per query head (2), got 1");
  variant.sinks = {0.5f, std::numeric_limits<float>::infinity()};
  EXPECT_EQ(errorOf([&] { variant.validate(shape); }),
            where + "sink 1 is inf; sinks must be finite");
}

TEST(AttentionSinksDropoutVariantTest, RandomSinksAreReproducible) {
  std::vector<float> sinks = randomSinks(64, 1000, 3);
  ASSERT_EQ(sinks.size(), 64u);
  EXPECT_EQ(randomSinks(64, 1000, 3), sinks);
  EXPECT_NE(randomSinks(64, 1000, 4), sinks);
  // ln(1000) + N(0, 1): the mean of 64 within 0.5 of ln(1000), all finite.
  double sum = 0;
  for (float sink : sinks) {
    EXPECT_TRUE(std::isfinite(sink));
    sum += sink;
  }
  EXPECT_NEAR(sum / 64, std::log(1000.0), 0.5);
}

/// A kernel spec with the attention tensors and `extra` parameters.
KernelSpec kernelTaking(std::vector<KernelParam> extra) {
  return reftest::kernelTaking("attention_fwd_bf16_d64_sinks_dropout",
                               std::move(extra));
}

TEST(AttentionSinksDropoutParamsTest, ValuesBindByNameWithTheirBits) {
  AttentionShape shape{2, 3, 1, 6, 6, 64};
  AttentionVariant variant;
  variant.sinks = {0.5f, -1.0f, 2.0f};
  // A seed and an offset beyond i64's and i32's positive ranges: the
  // kernels take their bits.
  variant.dropout =
      AttentionDropout{0.125f, 0xfedcba9876543210ULL, 4000000000u};
  KernelSpec kernel = kernelTaking({{"sinks", ParamKind::Memref, DType::F32, 1},
                                    {"dropout_p", ParamKind::F32},
                                    {"dropout_seed", ParamKind::I64},
                                    {"dropout_offset", ParamKind::I32}});
  VariantParams params = variantParams(variant, shape, {&kernel});
  EXPECT_EQ(std::get<float>(params.scalars.at("dropout_p")), 0.125f);
  std::int64_t seed = std::get<std::int64_t>(params.scalars.at("dropout_seed"));
  EXPECT_EQ(static_cast<std::uint64_t>(seed), 0xfedcba9876543210ULL);
  std::int32_t offset =
      std::get<std::int32_t>(params.scalars.at("dropout_offset"));
  EXPECT_EQ(static_cast<std::uint32_t>(offset), 4000000000u);
  ASSERT_EQ(params.tensors.size(), 1u);
  EXPECT_EQ(params.tensors[0].name, "sinks");
  EXPECT_EQ(params.tensors[0].dtype, DType::F32);
  EXPECT_EQ(params.tensors[0].shape, (Shape{3}));
  float last = 0;
  std::memcpy(&last, params.tensors[0].bytes.data() + 8, 4);
  EXPECT_EQ(last, 2.0f);
}

TEST(AttentionSinksDropoutParamsTest, KernelsWithoutTheValuesAreRefused) {
  AttentionShape shape{1, 2, 2, 4, 4, 64};
  AttentionVariant variant;
  variant.dropout = AttentionDropout{0.1f, 0, 0};
  // A kernel named for dropout but compiled without its seed.
  KernelSpec kernel = kernelTaking(
      {{"dropout_p", ParamKind::F32}, {"dropout_offset", ParamKind::I32}});
  EXPECT_EQ(errorOf([&] { variantParams(variant, shape, {&kernel}); }),
            "kernel attention_fwd_bf16_d64_sinks_dropout (variant dropout) "
            "takes no parameter 'dropout_seed', which --dropout P (with "
            "--seed and --dropout-offset) gives; its parameters are q, k, v, "
            "out, lse, dropout_p, dropout_offset");
  KernelSpec sinksKernel =
      kernelTaking({{"sinks", ParamKind::Memref, DType::F32, 1}});
  EXPECT_EQ(errorOf([&] { variantParams({}, shape, {&sinksKernel}); }),
            "kernel attention_fwd_bf16_d64_sinks_dropout takes 'sinks', which "
            "--sinks or --sinks-file gives");
  variant = {};
  variant.customName = "mine";
  variant.params = {{"dropout_p", "0.5"}};
  EXPECT_EQ(errorOf([&] { variantParams(variant, shape, {&kernel}); }),
            "--param dropout_p: 'dropout_p' is bound by fa-run itself (give "
            "it with --dropout P (with --seed and --dropout-offset))");
}

} // namespace
