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

/// log(exp(sink) + sum(exp(scores))), shifted by the maximum so exp cannot
/// overflow; without a sink (-inf) the log-sum-exp of the scores, -inf when
/// there are none.
double logSumExp(const std::vector<double> &scores, double sink) {
  double maximum = sink;
  for (double score : scores)
    maximum = std::max(maximum, score);
  if (std::isinf(maximum))
    return maximum;
  double sum = std::exp(sink - maximum);
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
  std::vector<double> dropout;    // Z_ij (1 without dropout).
  double lse = 0; // With the sink; -inf when no key is kept and no sink.
  double sink = -std::numeric_limits<double>::infinity(); // Its logit.

  /// Fills the row (b, h, i) of `rule`.
  void compute(const AttentionShape &shape, const AttentionVariantRule &rule,
               std::int64_t b, std::int64_t h, std::int64_t i,
               const float *query, const float *keyRows, double scale) {
    keys.clear();
    scores.clear();
    weights.clear();
    dropout.clear();
    long long first, end;
    ruleKeyRange(rule, i, first, end);
    for (std::int64_t j = first; j < end; ++j)
      if (ruleKeeps(rule, b, h, i, j)) {
        keys.push_back(j);
        double score =
            scale * dot(query, keyRows + j * shape.headDim, shape.headDim);
        scores.push_back(score);
        weights.push_back(ruleScore(rule, score, h, i, j));
        dropout.push_back(ruleDropout(rule, b, h, i, j));
      }
    sink = rule.sinks ? static_cast<double>(rule.sinks[h])
                      : -std::numeric_limits<double>::infinity();
    lse = logSumExp(weights, sink);
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
                      double weight = softmax.weights[t] * softmax.dropout[t];
                      for (std::int64_t d = 0; d < D; ++d)
                        out[d] += weight * static_cast<double>(value[d]);
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
  AttentionGradReference result{zeros(shape.query()),
                                zeros(shape.keyValue()),
                                zeros(shape.keyValue()),
                                {}};
  if (!variant.sinks.empty())
    result.dsinks.assign(static_cast<std::size_t>(shape.heads), 0);
  SoftmaxRow softmax;
  std::vector<double> dweights;
  forEachQueryRow(
      shape, q, k, v,
      [&](std::int64_t b, std::int64_t h, std::int64_t row, std::int64_t i,
          const float *query, const float *keys, const float *values,
          std::int64_t kvHead) {
        // A row that keeps no key contributes nothing.
        softmax.compute(shape, rule, b, h, i, query, keys, scale);
        const float *gradOut = dout.data() + row * D;
        // dP_ij = Z_ij dO_i . v_j, and delta_i = sum_j P_ij
        // dP_ij (= dO_i . out_i).
        dweights.resize(softmax.keys.size());
        double delta = 0;
        for (std::size_t t = 0; t < softmax.keys.size(); ++t) {
          dweights[t] = softmax.dropout[t] *
                        dot(gradOut, values + softmax.keys[t] * D, D);
          delta += softmax.weights[t] * dweights[t];
        }
        // The sink's P is exp(sink - lse): d out_i / d sink =
        // -P_sink out_i, so dL/dsink = -P_sink delta_i.
        if (!result.dsinks.empty())
          result.dsinks[h] -= std::exp(softmax.sink - softmax.lse) * delta;
        double *dq = result.dq.data() + row * D;
        double *dk = result.dk.data() + kvHead * shape.seqKv * D;
        double *dv = result.dv.data() + kvHead * shape.seqKv * D;
        for (std::size_t t = 0; t < softmax.keys.size(); ++t) {
          std::int64_t j = softmax.keys[t];
          // dS = dS' * ds'/ds: the score function's derivative.
          double dscore = softmax.weights[t] * (dweights[t] - delta) *
                          ruleScoreDerivative(rule, softmax.scores[t]);
          double dropped = softmax.weights[t] * softmax.dropout[t];
          for (std::int64_t d = 0; d < D; ++d) {
            dq[d] += scale * dscore * keys[j * D + d];
            dk[j * D + d] += scale * dscore * query[d];
            dv[j * D + d] += dropped * gradOut[d];
          }
        }
      });
  return result;
}

} // namespace fa
