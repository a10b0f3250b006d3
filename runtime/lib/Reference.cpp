//===- Reference.cpp - Attention and its gradients in fp64 on the CPU -----===//

#include "fa/runtime/Reference.h"

#include "fa/runtime/Error.h"
#include "fa/runtime/Nvtx.h"

#include "AttentionVariantRule.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fa {
namespace {

double dot(const float *a, const float *b, std::int64_t length) {
  double sum = 0;
  for (std::int64_t d = 0; d < length; ++d)
    sum += static_cast<double>(a[d]) * static_cast<double>(b[d]);
  return sum;
}

/// log(sum(exp(scores))), shifted by the maximum so exp cannot overflow.
double logSumExp(const std::vector<double> &scores) {
  double maximum = *std::max_element(scores.begin(), scores.end());
  double sum = 0;
  for (double score : scores)
    sum += std::exp(score - maximum);
  return maximum + std::log(sum);
}

void expectElements(const std::vector<float> &values, const Shape &shape,
                    const char *name, const char *what) {
  if (static_cast<std::int64_t>(values.size()) != elementCount(shape))
    throw Error(std::string("computing the attention ") + what + ": " + name +
                " has " + std::to_string(values.size()) +
                " elements, expected " + formatShape(shape));
}

void expectInputs(const AttentionShape &shape, const std::vector<float> &q,
                  const std::vector<float> &k, const std::vector<float> &v,
                  const char *what) {
  shape.validate();
  expectElements(q, shape.query(), "q", what);
  expectElements(k, shape.keyValue(), "k", what);
  expectElements(v, shape.keyValue(), "v", what);
}

/// Calls visit(b, h, row, i, query, keys, values, kvHead) for every query
/// row i of every batch b and head h: `row` indexes [batch, heads, seq_q],
/// `kvHead` [batch, kv_heads], and the pointers lead to the row's query and
/// to its kv head's keys and values.
template <typename Visit>
void forEachQueryRow(const AttentionShape &shape, const std::vector<float> &q,
                     const std::vector<float> &k, const std::vector<float> &v,
                     Visit visit) {
  const std::int64_t D = shape.headDim;
  for (std::int64_t b = 0; b < shape.batch; ++b)
    for (std::int64_t h = 0; h < shape.heads; ++h) {
      std::int64_t kvHead = b * shape.kvHeads + shape.kvHeadOf(h);
      const float *keys = k.data() + kvHead * shape.seqKv * D;
      const float *values = v.data() + kvHead * shape.seqKv * D;
      for (std::int64_t i = 0; i < shape.seqQ; ++i) {
        std::int64_t row = (b * shape.heads + h) * shape.seqQ + i;
        visit(b, h, row, i, q.data() + row * D, keys, values, kvHead);
      }
    }
}

/// One query row's softmax over the keys it keeps.
struct SoftmaxRow {
  std::vector<std::int64_t> keys; // The kept j, increasing.
  std::vector<double> scores;     // s_ij = scale * q_i . k_j (before the
                                  // variant's score function).
  std::vector<double> weights;    // P_ij.
  double lse = 0;                 // -inf when no key is kept.

  /// Fills the row (b, h, i) of `rule`.
  void compute(const AttentionShape &shape, const AttentionVariantRule &rule,
               std::int64_t b, std::int64_t h, std::int64_t i,
               const float *query, const float *keyRows, double scale) {
    keys.clear();
    scores.clear();
    weights.clear();
    long long first, end;
    ruleKeyRange(rule, i, first, end);
    for (std::int64_t j = first; j < end; ++j)
      if (ruleKeeps(rule, b, h, i, j)) {
        keys.push_back(j);
        double score =
            scale * dot(query, keyRows + j * shape.headDim, shape.headDim);
        scores.push_back(score);
        weights.push_back(ruleScore(rule, score, h, i, j));
      }
    if (keys.empty()) {
      lse = -std::numeric_limits<double>::infinity();
      return;
    }
    lse = logSumExp(weights);
    for (double &weight : weights)
      weight = std::exp(weight - lse);
  }
};

AttentionVariant causalVariant(bool causal) {
  AttentionVariant variant;
  if (causal)
    variant.causal = CausalAlignment::TopLeft;
  return variant;
}

std::vector<double> zeros(const Shape &shape) {
  return std::vector<double>(static_cast<std::size_t>(elementCount(shape)), 0);
}

} // namespace

AttentionReference referenceAttentionCpu(const AttentionShape &shape,
                                         const std::vector<float> &q,
                                         const std::vector<float> &k,
                                         const std::vector<float> &v,
                                         double scale, bool causal) {
  return referenceAttentionCpu(shape, q, k, v, scale, causalVariant(causal));
}

AttentionReference
referenceAttentionCpu(const AttentionShape &shape, const std::vector<float> &q,
                      const std::vector<float> &k, const std::vector<float> &v,
                      double scale, const AttentionVariant &variant) {
  NvtxRange range{"fp64 reference (CPU): attention"};
  expectInputs(shape, q, k, v, "reference");
  variant.validate(shape);
  const AttentionVariantRule rule = hostVariantRule(variant, shape);
  const std::int64_t D = shape.headDim;
  AttentionReference result{zeros(shape.query()), zeros(shape.logSumExp())};
  SoftmaxRow softmax;
  forEachQueryRow(shape, q, k, v,
                  [&](std::int64_t b, std::int64_t h, std::int64_t row,
                      std::int64_t i, const float *query, const float *keys,
                      const float *values, std::int64_t) {
                    softmax.compute(shape, rule, b, h, i, query, keys, scale);
                    result.lse[row] = softmax.lse;
                    double *out = result.out.data() + row * D;
                    for (std::size_t t = 0; t < softmax.keys.size(); ++t) {
                      const float *value = values + softmax.keys[t] * D;
                      for (std::int64_t d = 0; d < D; ++d)
                        out[d] +=
                            softmax.weights[t] * static_cast<double>(value[d]);
                    }
                  });
  return result;
}

AttentionGradReference referenceAttentionGradCpu(const AttentionShape &shape,
                                                 const std::vector<float> &q,
                                                 const std::vector<float> &k,
                                                 const std::vector<float> &v,
                                                 const std::vector<float> &dout,
                                                 double scale, bool causal) {
  return referenceAttentionGradCpu(shape, q, k, v, dout, scale,
                                   causalVariant(causal));
}

AttentionGradReference referenceAttentionGradCpu(
    const AttentionShape &shape, const std::vector<float> &q,
    const std::vector<float> &k, const std::vector<float> &v,
    const std::vector<float> &dout, double scale,
    const AttentionVariant &variant) {
  NvtxRange range{"fp64 reference (CPU): attention gradients"};
  const char *what = "gradient reference";
  expectInputs(shape, q, k, v, what);
  expectElements(dout, shape.query(), "dout", what);
  variant.validate(shape);
  const AttentionVariantRule rule = hostVariantRule(variant, shape);
  const std::int64_t D = shape.headDim;
  AttentionGradReference result{zeros(shape.query()), zeros(shape.keyValue()),
                                zeros(shape.keyValue())};
  SoftmaxRow softmax;
  std::vector<double> dweights;
  forEachQueryRow(shape, q, k, v,
                  [&](std::int64_t b, std::int64_t h, std::int64_t row,
                      std::int64_t i, const float *query, const float *keys,
                      const float *values, std::int64_t kvHead) {
                    // A row that keeps no key contributes nothing.
                    softmax.compute(shape, rule, b, h, i, query, keys, scale);
                    const float *gradOut = dout.data() + row * D;
                    // dP_ij, and delta_i = sum_j P_ij dP_ij.
                    dweights.resize(softmax.keys.size());
                    double delta = 0;
                    for (std::size_t t = 0; t < softmax.keys.size(); ++t) {
                      dweights[t] =
                          dot(gradOut, values + softmax.keys[t] * D, D);
                      delta += softmax.weights[t] * dweights[t];
                    }
                    double *dq = result.dq.data() + row * D;
                    double *dk = result.dk.data() + kvHead * shape.seqKv * D;
                    double *dv = result.dv.data() + kvHead * shape.seqKv * D;
                    for (std::size_t t = 0; t < softmax.keys.size(); ++t) {
                      std::int64_t j = softmax.keys[t];
                      // dS = dS' * ds'/ds: the score function's derivative.
                      double dscore =
                          softmax.weights[t] * (dweights[t] - delta) *
                          ruleScoreDerivative(rule, softmax.scores[t]);
                      for (std::int64_t d = 0; d < D; ++d) {
                        dq[d] += scale * dscore * keys[j * D + d];
                        dk[j * D + d] += scale * dscore * query[d];
                        dv[j * D + d] += softmax.weights[t] * gradOut[d];
                      }
                    }
                  });
  return result;
}

} // namespace fa
