//===- LayerNormReference.cpp - LayerNorm in fp64 on the CPU --------------===//

#include "fa/runtime/LayerNormReference.h"

#include "fa/runtime/Error.h"
#include "fa/runtime/Nvtx.h"

#include <cmath>
#include <string>

namespace fa {
namespace {

struct RowStats {
  double mean = 0;
  double rstd = 0;
};

RowStats rowStats(const float *row, std::int64_t cols, double eps) {
  double sum = 0;
  for (std::int64_t j = 0; j < cols; ++j)
    sum += row[j];
  double mean = sum / static_cast<double>(cols);
  // Two passes: the variance from squared deviations, not E[x^2] - mean^2,
  // which cancels when |mean| is large against the spread.
  double squares = 0;
  for (std::int64_t j = 0; j < cols; ++j)
    squares += (row[j] - mean) * (row[j] - mean);
  double variance = squares / static_cast<double>(cols);
  return {mean, 1 / std::sqrt(variance + eps)};
}

void expectElements(const std::vector<float> &values, const Shape &shape,
                    const char *name) {
  if (static_cast<std::int64_t>(values.size()) != elementCount(shape))
    throw Error(std::string("computing the layernorm reference: ") + name +
                " has " + std::to_string(values.size()) +
                " elements, expected " + formatShape(shape));
}

} // namespace

LayerNormForwardReference
referenceLayerNormForward(const LayerNormShape &shape,
                          const std::vector<float> &x,
                          const std::vector<float> &weight,
                          const std::vector<float> &bias, double eps) {
  NvtxRange range{"fp64 reference: layernorm forward"};
  shape.validate();
  expectElements(x, shape.matrix(), "x");
  expectElements(weight, shape.row(), "weight");
  expectElements(bias, shape.row(), "bias");
  const std::int64_t N = shape.cols;
  LayerNormForwardReference result;
  result.y.resize(x.size());
  result.mean.resize(static_cast<std::size_t>(shape.rows));
  result.rstd.resize(static_cast<std::size_t>(shape.rows));
  for (std::int64_t i = 0; i < shape.rows; ++i) {
    const float *row = x.data() + i * N;
    RowStats stats = rowStats(row, N, eps);
    result.mean[i] = stats.mean;
    result.rstd[i] = stats.rstd;
    double *y = result.y.data() + i * N;
    for (std::int64_t j = 0; j < N; ++j)
      y[j] = (row[j] - stats.mean) * stats.rstd * weight[j] + bias[j];
  }
  return result;
}

LayerNormBackwardReference
referenceLayerNormBackward(const LayerNormShape &shape,
                           const std::vector<float> &x,
                           const std::vector<float> &weight,
                           const std::vector<float> &dy, double eps) {
  NvtxRange range{"fp64 reference: layernorm backward"};
  shape.validate();
  expectElements(x, shape.matrix(), "x");
  expectElements(weight, shape.row(), "weight");
  expectElements(dy, shape.matrix(), "dy");
  const std::int64_t N = shape.cols;
  LayerNormBackwardReference result;
  result.dx.resize(x.size());
  result.dweight.assign(static_cast<std::size_t>(N), 0);
  result.dbias.assign(static_cast<std::size_t>(N), 0);
  std::vector<double> xhat(static_cast<std::size_t>(N));
  for (std::int64_t i = 0; i < shape.rows; ++i) {
    const float *row = x.data() + i * N;
    const float *gradient = dy.data() + i * N;
    RowStats stats = rowStats(row, N, eps);
    double meanG = 0, meanGXhat = 0;
    for (std::int64_t j = 0; j < N; ++j) {
      xhat[j] = (row[j] - stats.mean) * stats.rstd;
      double g = static_cast<double>(gradient[j]) * weight[j];
      meanG += g;
      meanGXhat += g * xhat[j];
      result.dweight[j] += gradient[j] * xhat[j];
      result.dbias[j] += gradient[j];
    }
    meanG /= static_cast<double>(N);
    meanGXhat /= static_cast<double>(N);
    double *dx = result.dx.data() + i * N;
    for (std::int64_t j = 0; j < N; ++j) {
      double g = static_cast<double>(gradient[j]) * weight[j];
      dx[j] = stats.rstd * (g - meanG - xhat[j] * meanGXhat);
    }
  }
  return result;
}

} // namespace fa
