//===- Reference.cpp - Attention and its gradients in fp64 on the CPU -----===//

#include "fa/runtime/Reference.h"

#include "fa/runtime/Error.h"
#include "fa/runtime/Nvtx.h"

#include <algorithm>
#include <cmath>

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

/// Calls visit(row, i, query, keys, values, kvHead) for every query row i of
/// every batch and head: `row` indexes [batch, heads, seq_q], `kvHead`
/// [batch, kv_heads], and the pointers lead to the row's query and to its
/// kv head's keys and values.
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
        visit(row, i, q.data() + row * D, keys, values, kvHead);
      }
    }
}

/// P_ij of query row i over the keys it sees (0..i when causal: top-left
/// alignment, so never none), into `weights`; returns the row's lse.
double softmaxRow(const AttentionShape &shape, std::int64_t i,
                  const float *query, const float *keys, double scale,
                  bool causal, std::vector<double> &weights) {
  std::int64_t visible = causal ? std::min(i + 1, shape.seqKv) : shape.seqKv;
  weights.resize(static_cast<std::size_t>(visible));
  for (std::int64_t j = 0; j < visible; ++j)
    weights[j] = scale * dot(query, keys + j * shape.headDim, shape.headDim);
  double lse = logSumExp(weights);
  for (double &weight : weights)
    weight = std::exp(weight - lse);
  return lse;
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
  NvtxRange range{"fp64 reference (CPU): attention"};
  expectInputs(shape, q, k, v, "reference");
  const std::int64_t D = shape.headDim;
  AttentionReference result{zeros(shape.query()), zeros(shape.logSumExp())};
  std::vector<double> weights;
  forEachQueryRow(shape, q, k, v,
                  [&](std::int64_t row, std::int64_t i, const float *query,
                      const float *keys, const float *values, std::int64_t) {
                    result.lse[row] = softmaxRow(shape, i, query, keys, scale,
                                                 causal, weights);
                    double *out = result.out.data() + row * D;
                    for (std::size_t j = 0; j < weights.size(); ++j)
                      for (std::int64_t d = 0; d < D; ++d)
                        out[d] +=
                            weights[j] * static_cast<double>(values[j * D + d]);
                  });
  return result;
}

AttentionGradReference referenceAttentionGradCpu(const AttentionShape &shape,
                                                 const std::vector<float> &q,
                                                 const std::vector<float> &k,
                                                 const std::vector<float> &v,
                                                 const std::vector<float> &dout,
                                                 double scale, bool causal) {
  NvtxRange range{"fp64 reference (CPU): attention gradients"};
  const char *what = "gradient reference";
  expectInputs(shape, q, k, v, what);
  expectElements(dout, shape.query(), "dout", what);
  const std::int64_t D = shape.headDim;
  AttentionGradReference result{zeros(shape.query()), zeros(shape.keyValue()),
                                zeros(shape.keyValue())};
  std::vector<double> weights, dweights;
  forEachQueryRow(shape, q, k, v,
                  [&](std::int64_t row, std::int64_t i, const float *query,
                      const float *keys, const float *values,
                      std::int64_t kvHead) {
                    softmaxRow(shape, i, query, keys, scale, causal, weights);
                    const float *gradOut = dout.data() + row * D;
                    // dP_ij, and delta_i = sum_j P_ij dP_ij.
                    dweights.resize(weights.size());
                    double delta = 0;
                    for (std::size_t j = 0; j < weights.size(); ++j) {
                      dweights[j] = dot(gradOut, values + j * D, D);
                      delta += weights[j] * dweights[j];
                    }
                    double *dq = result.dq.data() + row * D;
                    double *dk = result.dk.data() + kvHead * shape.seqKv * D;
                    double *dv = result.dv.data() + kvHead * shape.seqKv * D;
                    for (std::size_t j = 0; j < weights.size(); ++j) {
                      double dscore = weights[j] * (dweights[j] - delta);
                      for (std::int64_t d = 0; d < D; ++d) {
                        dq[d] += scale * dscore * keys[j * D + d];
                        dk[j * D + d] += scale * dscore * query[d];
                        dv[j * D + d] += weights[j] * gradOut[d];
                      }
                    }
                  });
  return result;
}

} // namespace fa
