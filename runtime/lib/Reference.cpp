//===- Reference.cpp - Attention in fp64 on the CPU -----------------------===//

#include "fa/runtime/Reference.h"

#include "fa/runtime/Error.h"

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
                    const char *name) {
  if (static_cast<std::int64_t>(values.size()) != elementCount(shape))
    throw Error(std::string("computing the attention reference: ") + name +
                " has " + std::to_string(values.size()) +
                " elements, expected " + formatShape(shape));
}

} // namespace

AttentionReference referenceAttentionCpu(const AttentionShape &shape,
                                         const std::vector<float> &q,
                                         const std::vector<float> &k,
                                         const std::vector<float> &v,
                                         double scale, bool causal) {
  shape.validate();
  expectElements(q, shape.query(), "q");
  expectElements(k, shape.keyValue(), "k");
  expectElements(v, shape.keyValue(), "v");
  const std::int64_t D = shape.headDim;
  AttentionReference result;
  result.out.assign(static_cast<std::size_t>(elementCount(shape.query())), 0);
  result.lse.assign(static_cast<std::size_t>(elementCount(shape.logSumExp())),
                    0);
  std::vector<double> scores;

  for (std::int64_t b = 0; b < shape.batch; ++b)
    for (std::int64_t h = 0; h < shape.heads; ++h) {
      std::int64_t kvHead = b * shape.kvHeads + shape.kvHeadOf(h);
      const float *keys = k.data() + kvHead * shape.seqKv * D;
      const float *values = v.data() + kvHead * shape.seqKv * D;
      for (std::int64_t i = 0; i < shape.seqQ; ++i) {
        std::int64_t row = (b * shape.heads + h) * shape.seqQ + i;
        const float *query = q.data() + row * D;
        // Top-left causal alignment: row i sees keys 0..i, so never none.
        std::int64_t visible =
            causal ? std::min(i + 1, shape.seqKv) : shape.seqKv;
        scores.resize(static_cast<std::size_t>(visible));
        for (std::int64_t j = 0; j < visible; ++j)
          scores[j] = scale * dot(query, keys + j * D, D);
        double lse = logSumExp(scores);
        result.lse[row] = lse;
        double *out = result.out.data() + row * D;
        for (std::int64_t j = 0; j < visible; ++j) {
          double weight = std::exp(scores[j] - lse);
          for (std::int64_t d = 0; d < D; ++d)
            out[d] += weight * static_cast<double>(values[j * D + d]);
        }
      }
    }
  return result;
}

} // namespace fa
