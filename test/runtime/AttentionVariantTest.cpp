//===- AttentionVariantTest.cpp - Variants: masks, scores, references -----===//
//
// The semantics of AttentionVariant.h checked on cases small enough to write
// down, and the fp64 references against a naive computation written here
// from the contract (an explicit keep matrix and score function), not from
// the runtime's own rule.
//
//===----------------------------------------------------------------------===//

#include "fa/runtime/AttentionVariant.h"
#include "fa/runtime/Npy.h"
#include "fa/runtime/Reference.h"

#include "../../runtime/lib/AttentionVariantRule.h"
#include "../ErrorTesting.h"
#include "AttentionReferenceTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>

using namespace fa;
using fa::errortest::errorOf;
using fa::reftest::randomValues;

namespace {

/// The keep matrix of (b, h) as rows of '1' (kept) and '.'.
std::vector<std::string> keepPattern(const AttentionVariant &variant,
                                     const AttentionShape &shape,
                                     std::int64_t b = 0, std::int64_t h = 0) {
  std::vector<std::string> rows;
  for (std::int64_t i = 0; i < shape.seqQ; ++i) {
    std::string row;
    for (std::int64_t j = 0; j < shape.seqKv; ++j)
      row += variant.keeps(shape, b, h, i, j) ? '1' : '.';
    rows.push_back(row);
  }
  return rows;
}

AttentionShape square(std::int64_t seq, std::int64_t batch = 1,
                      std::int64_t heads = 1) {
  return {batch, heads, heads, seq, seq, 4};
}

TEST(AttentionVariantTest, WindowKeepsItsBand) {
  AttentionVariant window;
  window.window = AttentionWindow{1, 2};
  EXPECT_EQ(
      keepPattern(window, square(5)),
      (std::vector<std::string>{"111..", "1111.", ".1111", "..111", "...11"}));
  // Bottom-right alignment: the band follows the diagonal j = i + off.
  AttentionShape wide{1, 1, 1, 2, 5, 4};
  EXPECT_EQ(keepPattern(window, wide),
            (std::vector<std::string>{"..111", "...11"}));
  // A window with causal is the sliding window of decoders.
  window.window = AttentionWindow{2, 0};
  window.causal = CausalAlignment::TopLeft;
  EXPECT_EQ(
      keepPattern(window, square(5)),
      (std::vector<std::string>{"1....", "11...", "111..", ".111.", "..111"}));
}

TEST(AttentionVariantTest, CausalAlignments) {
  AttentionVariant topLeft, bottomRight;
  topLeft.causal = CausalAlignment::TopLeft;
  bottomRight.causal = CausalAlignment::BottomRight;
  AttentionShape fewerQueries{1, 1, 1, 2, 4, 4}, moreQueries{1, 1, 1, 4, 2, 4};
  EXPECT_EQ(keepPattern(topLeft, fewerQueries),
            (std::vector<std::string>{"1...", "11.."}));
  EXPECT_EQ(keepPattern(bottomRight, fewerQueries),
            (std::vector<std::string>{"111.", "1111"}));
  EXPECT_EQ(keepPattern(topLeft, moreQueries),
            (std::vector<std::string>{"1.", "11", "11", "11"}));
  // The first queries see no key at all.
  EXPECT_EQ(keepPattern(bottomRight, moreQueries),
            (std::vector<std::string>{"..", "..", "1.", "11"}));
  EXPECT_EQ(bottomRight.keptPairs(moreQueries), 3);
  EXPECT_EQ(bottomRight.name(), "causal_bottom_right");
  EXPECT_EQ(topLeft.name(), "");
}

TEST(AttentionVariantTest, DocumentsKeepTheirOwnBlock) {
  AttentionVariant documents;
  documents.docIds = documentIdsFromLengths({3, 2}, 2, 8);
  EXPECT_EQ(documents.docIds,
            (std::vector<std::int32_t>{0, 0, 0, 1, 1, 2, 2, 2, //
                                       0, 0, 0, 1, 1, 2, 2, 2}));
  AttentionShape shape = square(8, 2);
  EXPECT_EQ(keepPattern(documents, shape, 1),
            (std::vector<std::string>{"111.....", "111.....", "111.....",
                                      "...11...", "...11...", ".....111",
                                      ".....111", ".....111"}));
  EXPECT_EQ(documents.keptPairs(shape), 2 * (9 + 4 + 9));
  EXPECT_EQ(documents.describe(), "document");
  documents.documentSource = "lengths 3,2";
  EXPECT_EQ(documents.describe(), "documents=lengths 3,2");
}

TEST(AttentionVariantTest, DocumentLengthsAndIdsAreChecked) {
  EXPECT_EQ(errorOf([] { documentIdsFromLengths({3, 0}, 1, 8); }),
            "document lengths: length 2 is 0; every length must be positive");
  EXPECT_EQ(errorOf([] { documentIdsFromLengths({}, 1, 8); }),
            "document lengths: expected at least one length");
  EXPECT_EQ(errorOf([] { checkDocumentIds({0, 0, 1, 1, 0, 1, 1, 0}, 2, 4); }),
            "doc ids must be non-decreasing along each batch row (the kernels "
            "skip tiles by it): doc ids [1, 3] = 0 follows 1");
  EXPECT_EQ(errorOf([] { checkDocumentIds({0, 0, 1}, 2, 4); }),
            "doc ids: expected [batch, seq] = [2, 4], 8 ids, got 3");
  AttentionVariant documents;
  documents.docIds = {0, 0, 1};
  EXPECT_EQ(errorOf([&] { documents.validate({1, 1, 1, 3, 4, 8}); }),
            "attention variant document on batch=1 heads=1 kv_heads=1 "
            "seq_q=3 seq_kv=4 head_dim=8: document masks need seq_q == "
            "seq_kv");
}

TEST(AttentionVariantTest, ValuesAreValidated) {
  AttentionShape shape = square(4, 1, 2);
  AttentionVariant variant;
  variant.window = AttentionWindow{-1, 0};
  EXPECT_NE(errorOf([&] {
              variant.validate(shape);
            }).find("window bounds must be non-negative, got (-1, 0)"),
            std::string::npos);
  variant = {};
  variant.softcap = 0.0f;
  EXPECT_NE(errorOf([&] {
              variant.validate(shape);
            }).find("softcap must be positive and finite, got 0"),
            std::string::npos);
  variant = {};
  variant.alibiSlopes = {0.5f};
  EXPECT_NE(errorOf([&] {
              variant.validate(shape);
            }).find("ALiBi needs one slope per head (2), got 1"),
            std::string::npos);
  variant = {};
  variant.customName = "prefix_lm";
  variant.mask.assign(12, 1);
  variant.maskShape = {3, 4};
  EXPECT_NE(errorOf([&] { variant.validate(shape); })
                .find("the mask has shape [3, 4], expected [4, 4] or "
                      "[1, 2, 4, 4]"),
            std::string::npos);
}

TEST(AttentionVariantTest, NamesFollowTheContractOrder) {
  AttentionVariant variant;
  variant.alibiSlopes = alibiSlopes(2);
  variant.softcap = 30.0f;
  variant.docIds = {0, 0};
  variant.window = AttentionWindow{4, 0};
  variant.causal = CausalAlignment::BottomRight;
  EXPECT_EQ(variant.name(),
            "causal_bottom_right+window+document+softcap+alibi");
  EXPECT_TRUE(isNamedVariant(variant.name()));
  EXPECT_TRUE(isNamedVariant("window+softcap"));
  EXPECT_FALSE(isNamedVariant("prefix_lm"));
  EXPECT_FALSE(isNamedVariant("window+prefix"));
  EXPECT_FALSE(isNamedVariant(""));
  variant.customName = "prefix_lm";
  EXPECT_EQ(variant.name(), "prefix_lm");
  EXPECT_EQ(variant.describe(), "causal=bottom-right window=(4, 0) document "
                                "softcap=30 alibi");
}

TEST(AttentionVariantTest, AlibiSlopesAreTheGeometricSequence) {
  std::vector<float> slopes = alibiSlopes(8);
  ASSERT_EQ(slopes.size(), 8u);
  for (int h = 0; h < 8; ++h)
    EXPECT_FLOAT_EQ(slopes[h], std::pow(2.0f, -(h + 1.0f)));
  EXPECT_FLOAT_EQ(alibiSlopes(4)[0], 0.25f);
}

TEST(AttentionVariantTest, KeptPairsCountEveryKeptElement) {
  // Against a count of keeps() over every element, for shapes on and off
  // the diagonal and each mask.
  std::vector<std::function<void(AttentionVariant &)>> variants = {
      [](AttentionVariant &) {},
      [](AttentionVariant &v) { v.causal = CausalAlignment::TopLeft; },
      [](AttentionVariant &v) { v.causal = CausalAlignment::BottomRight; },
      [](AttentionVariant &v) { v.window = AttentionWindow{3, 1}; },
      [](AttentionVariant &v) {
        v.window = AttentionWindow{0, 0};
        v.causal = CausalAlignment::TopLeft;
      },
      [](AttentionVariant &v) {
        v.window = AttentionWindow{20, 0};
        v.causal = CausalAlignment::BottomRight;
      }};
  for (const AttentionShape &shape :
       {AttentionShape{2, 3, 1, 7, 7, 8}, AttentionShape{2, 3, 1, 5, 11, 8},
        AttentionShape{1, 2, 2, 11, 5, 8}})
    for (const auto &make : variants) {
      AttentionVariant variant;
      make(variant);
      std::int64_t expected = 0;
      for (std::int64_t b = 0; b < shape.batch; ++b)
        for (std::int64_t h = 0; h < shape.heads; ++h)
          for (std::int64_t i = 0; i < shape.seqQ; ++i)
            for (std::int64_t j = 0; j < shape.seqKv; ++j)
              expected += variant.keeps(shape, b, h, i, j);
      EXPECT_EQ(variant.keptPairs(shape), expected)
          << variant.describe() << " on " << shape.describe();
    }
  // By hand: top-left causal on 4 keeps 1 + 2 + 3 + 4; the window(1, 2) of
  // WindowKeepsItsBand 3 + 4 + 4 + 3 + 2 per head; documents with causal.
  AttentionVariant causal;
  causal.causal = CausalAlignment::TopLeft;
  EXPECT_EQ(causal.keptPairs(square(4)), 10);
  AttentionVariant window;
  window.window = AttentionWindow{1, 2};
  EXPECT_EQ(window.keptPairs(square(5, 2, 3)), 6 * 16);
  EXPECT_DOUBLE_EQ(window.flops(square(5, 2, 3)), 4.0 * 4 * 6 * 16);
  AttentionVariant documents;
  documents.causal = CausalAlignment::TopLeft;
  documents.docIds = documentIdsFromLengths({3, 2}, 1, 8);
  EXPECT_EQ(documents.keptPairs(square(8, 1, 2)), 2 * (6 + 3 + 6));
  // A dense mask counts its nonzero elements that the rest keeps.
  AttentionVariant custom;
  custom.customName = "custom";
  custom.mask = {1, 0, 1, 1, 0, 1};
  custom.maskShape = {2, 3};
  EXPECT_EQ(custom.keptPairs({2, 2, 2, 2, 3, 8}), 4 * 4);
  custom.causal = CausalAlignment::TopLeft;
  EXPECT_EQ(custom.keptPairs({2, 2, 2, 2, 3, 8}), 4 * 2);
}

TEST(AttentionVariantRuleTest, KeyAndQueryRangesHoldEveryKeptElement) {
  // The GPU reference sweeps ruleKeyRange's keys per query and
  // ruleQueryRange's queries per key: each must hold every kept element,
  // and the query range exactly the rows whose key range holds the key.
  std::vector<std::function<void(AttentionVariant &)>> variants = {
      [](AttentionVariant &) {},
      [](AttentionVariant &v) { v.causal = CausalAlignment::TopLeft; },
      [](AttentionVariant &v) { v.causal = CausalAlignment::BottomRight; },
      [](AttentionVariant &v) { v.window = AttentionWindow{2, 3}; },
      [](AttentionVariant &v) {
        v.window = AttentionWindow{4, 0};
        v.causal = CausalAlignment::BottomRight;
      },
      [](AttentionVariant &v) {
        v.window = AttentionWindow{1, 6};
        v.causal = CausalAlignment::TopLeft;
      }};
  for (const AttentionShape &shape :
       {AttentionShape{1, 1, 1, 9, 9, 4}, AttentionShape{1, 1, 1, 4, 13, 4},
        AttentionShape{1, 1, 1, 13, 4, 4}})
    for (const auto &make : variants) {
      AttentionVariant variant;
      make(variant);
      AttentionVariantRule rule = hostVariantRule(variant, shape);
      for (long long i = 0; i < shape.seqQ; ++i)
        for (long long j = 0; j < shape.seqKv; ++j) {
          long long keyFirst, keyEnd, queryFirst, queryEnd;
          ruleKeyRange(rule, i, keyFirst, keyEnd);
          ruleQueryRange(rule, j, queryFirst, queryEnd);
          bool inKeyRange = keyFirst <= j && j < keyEnd;
          bool inQueryRange = queryFirst <= i && i < queryEnd;
          EXPECT_EQ(inKeyRange, inQueryRange)
              << variant.describe() << " on " << shape.describe() << " at ("
              << i << ", " << j << ")";
          EXPECT_EQ(variant.keeps(shape, 0, 0, i, j), inKeyRange);
        }
    }
}

/// The contract's forward, naively: an explicit keep(b, h, i, j) and score
/// function, every element visited.
struct NaiveVariant {
  std::function<bool(std::int64_t, std::int64_t, std::int64_t, std::int64_t)>
      keep;
  std::function<double(double, std::int64_t, std::int64_t, std::int64_t)> score;
};

AttentionReference naiveForward(const AttentionShape &shape,
                                const std::vector<float> &q,
                                const std::vector<float> &k,
                                const std::vector<float> &v, double scale,
                                const NaiveVariant &naive) {
  const std::int64_t D = shape.headDim;
  AttentionReference result;
  result.out.assign(static_cast<std::size_t>(elementCount(shape.query())), 0);
  result.lse.assign(static_cast<std::size_t>(elementCount(shape.logSumExp())),
                    0);
  for (std::int64_t b = 0; b < shape.batch; ++b)
    for (std::int64_t h = 0; h < shape.heads; ++h) {
      std::int64_t kvh = b * shape.kvHeads + shape.kvHeadOf(h);
      for (std::int64_t i = 0; i < shape.seqQ; ++i) {
        std::int64_t row = (b * shape.heads + h) * shape.seqQ + i;
        double sum = 0;
        std::vector<double> weights(static_cast<std::size_t>(shape.seqKv), 0);
        for (std::int64_t j = 0; j < shape.seqKv; ++j) {
          if (!naive.keep(b, h, i, j))
            continue;
          double s = 0;
          for (std::int64_t d = 0; d < D; ++d)
            s += double(q[row * D + d]) * k[(kvh * shape.seqKv + j) * D + d];
          weights[j] = std::exp(naive.score(scale * s, h, i, j));
          sum += weights[j];
        }
        result.lse[row] =
            sum > 0 ? std::log(sum) : -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < shape.seqKv; ++j)
          for (std::int64_t d = 0; d < D; ++d)
            if (weights[j] > 0)
              result.out[row * D + d] +=
                  weights[j] / sum * v[(kvh * shape.seqKv + j) * D + d];
      }
    }
  return result;
}

void expectClose(const std::vector<double> &actual,
                 const std::vector<double> &expected, double tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (std::isinf(expected[i])) {
      EXPECT_EQ(actual[i], expected[i]) << "element " << i;
      continue;
    }
    EXPECT_NEAR(actual[i], expected[i], tolerance) << "element " << i;
  }
}

TEST(AttentionVariantReferenceTest, EveryNamedVariantMatchesTheNaiveForward) {
  AttentionShape shape{2, 4, 2, 6, 9, 8};
  std::vector<float> q = randomValues(shape.query(), 1);
  std::vector<float> k = randomValues(shape.keyValue(), 2);
  std::vector<float> v = randomValues(shape.keyValue(), 3);
  const double scale = 0.6;
  const std::int64_t off = shape.seqKv - shape.seqQ;
  AttentionVariant variant;
  variant.causal = CausalAlignment::BottomRight;
  variant.window = AttentionWindow{2, 1};
  variant.softcap = 1.5f;
  variant.alibiSlopes = alibiSlopes(shape.heads);
  NaiveVariant naive{
      [&](std::int64_t, std::int64_t, std::int64_t i, std::int64_t j) {
        return j <= i + off && i + off - 2 <= j && j <= i + off + 1;
      },
      [&](double s, std::int64_t h, std::int64_t i, std::int64_t j) {
        double capped = 1.5 * std::tanh(s / 1.5);
        return capped -
               double(variant.alibiSlopes[h]) * std::fabs(double(i + off - j));
      }};
  AttentionReference reference =
      referenceAttentionCpu(shape, q, k, v, scale, variant);
  AttentionReference expected = naiveForward(shape, q, k, v, scale, naive);
  expectClose(reference.out, expected.out, 1e-12);
  expectClose(reference.lse, expected.lse, 1e-12);
}

TEST(AttentionVariantReferenceTest, DocumentsAndCustomMasksMatchTheNaive) {
  AttentionShape shape{2, 2, 1, 7, 7, 4};
  std::vector<float> q = randomValues(shape.query(), 4);
  std::vector<float> k = randomValues(shape.keyValue(), 5);
  std::vector<float> v = randomValues(shape.keyValue(), 6);
  AttentionVariant documents;
  documents.docIds = {0, 0, 0, 1, 1, 1, 1, 0, 1, 2, 2, 2, 3, 3};
  AttentionReference reference =
      referenceAttentionCpu(shape, q, k, v, 0.5, documents);
  NaiveVariant sameDocument{
      [&](std::int64_t b, std::int64_t, std::int64_t i, std::int64_t j) {
        return documents.docIds[b * 7 + i] == documents.docIds[b * 7 + j];
      },
      [](double s, std::int64_t, std::int64_t, std::int64_t) { return s; }};
  expectClose(reference.out,
              naiveForward(shape, q, k, v, 0.5, sameDocument).out, 1e-12);

  // Prefix-LM as a dense per-head mask: bidirectional over 3, then causal.
  AttentionVariant prefix;
  prefix.customName = "prefix_lm";
  prefix.maskShape = {2, 2, 7, 7};
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t h = 0; h < 2; ++h)
      for (std::int64_t i = 0; i < 7; ++i)
        for (std::int64_t j = 0; j < 7; ++j)
          prefix.mask.push_back(j < 3 + h || j <= i);
  NaiveVariant prefixLm{
      [](std::int64_t, std::int64_t h, std::int64_t i, std::int64_t j) {
        return j < 3 + h || j <= i;
      },
      [](double s, std::int64_t, std::int64_t, std::int64_t) { return s; }};
  expectClose(referenceAttentionCpu(shape, q, k, v, 0.5, prefix).out,
              naiveForward(shape, q, k, v, 0.5, prefixLm).out, 1e-12);
}

TEST(AttentionVariantReferenceTest, FullyMaskedRowsGiveZeroAndMinusInfinity) {
  // Bottom-right causal with more queries than keys: rows 0 and 1 see none.
  AttentionShape shape{1, 1, 1, 4, 2, 4};
  std::vector<float> q = randomValues(shape.query(), 7);
  std::vector<float> k = randomValues(shape.keyValue(), 8);
  std::vector<float> v = randomValues(shape.keyValue(), 9);
  std::vector<float> dout = randomValues(shape.query(), 10);
  AttentionVariant variant;
  variant.causal = CausalAlignment::BottomRight;
  variant.softcap = 5.0f;
  AttentionReference forward =
      referenceAttentionCpu(shape, q, k, v, 0.5, variant);
  for (std::int64_t i : {0, 1}) {
    EXPECT_EQ(forward.lse[i], -std::numeric_limits<double>::infinity());
    for (std::int64_t d = 0; d < 4; ++d)
      EXPECT_EQ(forward.out[i * 4 + d], 0.0);
  }
  EXPECT_TRUE(std::isfinite(forward.lse[2]));
  AttentionGradReference gradients =
      referenceAttentionGradCpu(shape, q, k, v, dout, 0.5, variant);
  for (std::int64_t d = 0; d < 8; ++d)
    EXPECT_EQ(gradients.dq[d], 0.0); // Rows 0 and 1.
  for (double value : gradients.dk)
    EXPECT_TRUE(std::isfinite(value));
  // Key 1 is seen by row 3 only, key 0 by rows 2 and 3: both nonzero.
  EXPECT_NE(gradients.dv[0], 0.0);
  EXPECT_NE(gradients.dv[4], 0.0);
}

TEST(AttentionVariantReferenceTest, GradientsMatchFiniteDifferences) {
  // Softcap (whose derivative 1 - tanh^2 the backward applies), ALiBi and a
  // window, with GQA and a cap small enough to bend the scores.
  AttentionShape shape{1, 2, 1, 5, 6, 3};
  AttentionVariant variant;
  variant.window = AttentionWindow{2, 1};
  variant.softcap = 0.75f;
  variant.alibiSlopes = alibiSlopes(2);
  reftest::expectGradientsMatchFiniteDifferences(shape, variant, 11);
}

TEST(AttentionVariantReferenceTest, PlainVariantIsTheOldReference) {
  AttentionShape shape{1, 2, 1, 5, 7, 4};
  std::vector<float> q = randomValues(shape.query(), 15);
  std::vector<float> k = randomValues(shape.keyValue(), 16);
  std::vector<float> v = randomValues(shape.keyValue(), 17);
  AttentionVariant causal;
  causal.causal = CausalAlignment::TopLeft;
  EXPECT_EQ(referenceAttentionCpu(shape, q, k, v, 0.5, causal).out,
            referenceAttentionCpu(shape, q, k, v, 0.5, true).out);
  EXPECT_EQ(referenceAttentionCpu(shape, q, k, v, 0.5, AttentionVariant{}).lse,
            referenceAttentionCpu(shape, q, k, v, 0.5, false).lse);
}

/// A kernel spec with the attention tensors and `extra` parameters.
KernelSpec kernelTaking(std::vector<KernelParam> extra) {
  return reftest::kernelTaking("attention_fwd_bf16_d64_prefix",
                               std::move(extra));
}

TEST(VariantParamsTest, NamedValuesBindByName) {
  AttentionShape shape{2, 4, 2, 6, 6, 64};
  AttentionVariant variant;
  variant.window = AttentionWindow{3, 0};
  variant.softcap = 20.0f;
  variant.alibiSlopes = alibiSlopes(4);
  variant.docIds = documentIdsFromLengths({4}, 2, 6);
  KernelSpec kernel =
      kernelTaking({{"window_left", ParamKind::I64, DType::F32, 0},
                    {"window_right", ParamKind::I64, DType::F32, 0},
                    {"doc_ids", ParamKind::I32Memref, DType::F32, 2},
                    {"softcap", ParamKind::F32, DType::F32, 0},
                    {"alibi_slopes", ParamKind::Memref, DType::F32, 1}});
  VariantParams params = variantParams(variant, shape, {&kernel});
  EXPECT_EQ(std::get<std::int64_t>(params.scalars.at("window_left")), 3);
  EXPECT_EQ(std::get<std::int64_t>(params.scalars.at("window_right")), 0);
  EXPECT_EQ(std::get<float>(params.scalars.at("softcap")), 20.0f);
  ASSERT_EQ(params.tensors.size(), 2u);
  EXPECT_EQ(params.tensors[0].name, "alibi_slopes");
  EXPECT_EQ(params.tensors[0].shape, (Shape{4}));
  EXPECT_EQ(params.tensors[0].bytes.size(), 16u);
  EXPECT_EQ(params.tensors[1].name, "doc_ids");
  EXPECT_EQ(params.tensors[1].kind, ParamKind::I32Memref);
  EXPECT_EQ(params.tensors[1].shape, (Shape{2, 6}));
  EXPECT_EQ(params.tensors[1].bytes.size(), 48u);
}

TEST(VariantParamsTest, UserParamsTakeTheKernelsKinds) {
  AttentionShape shape{1, 2, 2, 4, 4, 64};
  AttentionVariant variant;
  variant.customName = "prefix_lm";
  variant.params = {{"prefix", "3"}, {"temperature", "0.5"}};
  KernelSpec kernel =
      kernelTaking({{"prefix", ParamKind::I64, DType::F32, 0},
                    {"temperature", ParamKind::F32, DType::F32, 0}});
  VariantParams params = variantParams(variant, shape, {&kernel});
  EXPECT_EQ(std::get<std::int64_t>(params.scalars.at("prefix")), 3);
  EXPECT_EQ(std::get<float>(params.scalars.at("temperature")), 0.5f);

  // A tensor capture from a .npy file of integers.
  std::filesystem::path file =
      std::filesystem::path(testing::TempDir()) / "fa-variant-starts.npy";
  writeNpy(file.string(), IntegerTensor{{2}, {1, 3}});
  KernelSpec withTensor =
      kernelTaking({{"starts", ParamKind::I32Memref, DType::F32, 1}});
  variant.params = {{"starts", file.string()}};
  params = variantParams(variant, shape, {&withTensor});
  ASSERT_EQ(params.tensors.size(), 1u);
  EXPECT_EQ(params.tensors[0].shape, (Shape{2}));
  std::int32_t second = 0;
  std::memcpy(&second, params.tensors[0].bytes.data() + 4, 4);
  EXPECT_EQ(second, 3);
}

TEST(VariantParamsTest, TheTileCounterIsTheLaunchsOwn) {
  // A persistent causal forward's tile_counter is bound by its launch
  // (AttentionLaunch, the C API's workspace): fa-run must not ask for it.
  AttentionShape shape{1, 2, 2, 4, 4, 64};
  KernelSpec kernel =
      kernelTaking({{"tile_counter", ParamKind::I32Memref, DType::F32, 1}});
  AttentionVariant variant;
  VariantParams params = variantParams(variant, shape, {&kernel});
  EXPECT_TRUE(params.tensors.empty());
  EXPECT_TRUE(params.scalars.empty());
  variant.params = {{"tile_counter", "c.npy"}};
  EXPECT_NE(errorOf([&] { variantParams(variant, shape, {&kernel}); }), "");
}

TEST(VariantParamsTest, AFusedDqsScratchIsTheLaunchsOwn) {
  // A dkdv kernel that sums dQ takes dq_accum and dq_semaphores, bound by
  // its launch (AttentionBackwardLaunch, the C API's workspace).
  AttentionShape shape{1, 2, 2, 4, 4, 64};
  KernelSpec kernel =
      kernelTaking({{"dq_accum", ParamKind::Memref, DType::F32, 4},
                    {"dq_semaphores", ParamKind::I32Memref, DType::F32, 3}});
  AttentionVariant variant;
  VariantParams params = variantParams(variant, shape, {&kernel});
  EXPECT_TRUE(params.tensors.empty());
  EXPECT_TRUE(params.scalars.empty());
  for (const char *name : {"dq_accum", "dq_semaphores"}) {
    variant.params = {{name, "s.npy"}};
    EXPECT_EQ(errorOf([&] { variantParams(variant, shape, {&kernel}); }),
              std::string("--param ") + name + ": '" + name +
                  "' is bound by fa-run itself");
  }
}

TEST(VariantParamsTest, MistakesAreNamed) {
  AttentionShape shape{1, 2, 2, 4, 4, 64};
  KernelSpec kernel = kernelTaking({{"prefix", ParamKind::I64, DType::F32, 0}});
  AttentionVariant variant;
  variant.customName = "prefix_lm";
  EXPECT_EQ(errorOf([&] { variantParams(variant, shape, {&kernel}); }),
            "kernel attention_fwd_bf16_d64_prefix takes parameter 'prefix' "
            "(i64): give it with --param prefix=VALUE");
  variant.params = {{"prefix", "3"}, {"prefx", "3"}};
  EXPECT_EQ(errorOf([&] { variantParams(variant, shape, {&kernel}); }),
            "--param prefx: kernel attention_fwd_bf16_d64_prefix has no "
            "parameter 'prefx'; its parameters are q, k, v, out, lse, prefix");
  variant.params = {{"prefix", "3.5"}};
  EXPECT_EQ(errorOf([&] { variantParams(variant, shape, {&kernel}); }),
            "--param prefix=3.5: parameter 'prefix' is i64; expected an "
            "integer");
  variant.params = {{"prefix", "p.npy"}};
  EXPECT_EQ(errorOf([&] { variantParams(variant, shape, {&kernel}); }),
            "--param prefix=p.npy: parameter 'prefix' of kernel "
            "attention_fwd_bf16_d64_prefix is a scalar (i64): give a number");
  variant.params = {{"window_left", "3"}};
  EXPECT_EQ(errorOf([&] { variantParams(variant, shape, {&kernel}); }),
            "--param window_left: 'window_left' is bound by fa-run itself "
            "(give it with --window L,R)");
  KernelSpec windowed =
      kernelTaking({{"window_left", ParamKind::I64, DType::F32, 0}});
  EXPECT_EQ(errorOf([&] { variantParams({}, shape, {&windowed}); }),
            "kernel attention_fwd_bf16_d64_prefix takes 'window_left', which "
            "--window L,R gives");
}

TEST(NpyIntegersTest, RoundTripAndBools) {
  std::filesystem::path directory =
      std::filesystem::path(testing::TempDir()) / "fa-npy-integers";
  std::filesystem::create_directories(directory);
  std::string path = (directory / "ids.npy").string();
  writeNpy(path, IntegerTensor{{2, 3}, {0, 0, 1, -5, 7, 2147483647}});
  IntegerTensor read = readNpyIntegers(path);
  EXPECT_EQ(read.shape, (Shape{2, 3}));
  EXPECT_EQ(read.values,
            (std::vector<std::int64_t>{0, 0, 1, -5, 7, 2147483647}));
  EXPECT_NE(errorOf([&] { readNpy(path); }).find("unsupported dtype '<i4'"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              writeNpy(path, IntegerTensor{{1}, {std::int64_t{1} << 40}});
            }).find("does not fit '<i4'"),
            std::string::npos);

  // NumPy's bool: a '|b1' header on one byte per element.
  std::string boolPath = (directory / "mask.npy").string();
  writeNpy(boolPath, IntegerTensor{{4}, {0, 0, 0, 0}});
  std::string header = "{'descr': '|b1', 'fortran_order': False, "
                       "'shape': (4,), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::string file = std::string("\x93NUMPY\x01\x00", 8);
  file += static_cast<char>(header.size());
  file += '\0';
  file += header;
  file += std::string("\x01\x00\x01\x01", 4);
  {
    std::ofstream out(boolPath, std::ios::binary | std::ios::trunc);
    out << file;
  }
  EXPECT_EQ(readNpyIntegers(boolPath).values,
            (std::vector<std::int64_t>{1, 0, 1, 1}));
}

} // namespace
