//===- LayerNormReference.h - LayerNorm computed in fp64 --------*- C++ -*-===//
//
// What every LayerNorm kernel is checked against. Per row i of x [rows, cols]
// (N = cols), with inputs as the kernel saw them (rounded to its dtype) and
// every operation in double:
//   mean_i  = sum_j x_ij / N
//   rstd_i  = 1 / sqrt(sum_j (x_ij - mean_i)^2 / N + eps)   biased variance
//   xhat_ij = (x_ij - mean_i) * rstd_i
//   y_ij    = xhat_ij * weight_j + bias_j
// and backward, for an incoming gradient dy:
//   g_ij      = dy_ij * weight_j
//   dx_ij     = rstd_i * (g_ij - mean_j(g_ij) - xhat_ij * mean_j(g_ij xhat_ij))
//   dweight_j = sum_i dy_ij * xhat_ij
//   dbias_j   = sum_i dy_ij
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_LAYERNORMREFERENCE_H
#define FA_RUNTIME_LAYERNORMREFERENCE_H

#include "fa/runtime/LayerNormShape.h"

#include <vector>

namespace fa {

struct LayerNormForwardReference {
  std::vector<double> y;    // [rows, cols]
  std::vector<double> mean; // [rows]
  std::vector<double> rstd; // [rows]
};

struct LayerNormBackwardReference {
  std::vector<double> dx;      // [rows, cols]
  std::vector<double> dweight; // [cols]
  std::vector<double> dbias;   // [cols]
};

LayerNormForwardReference
referenceLayerNormForward(const LayerNormShape &shape,
                          const std::vector<float> &x,
                          const std::vector<float> &weight,
                          const std::vector<float> &bias, double eps);

/// Recomputes mean and rstd from x (in fp64) rather than taking a kernel's.
LayerNormBackwardReference referenceLayerNormBackward(
    const LayerNormShape &shape, const std::vector<float> &x,
    const std::vector<float> &weight, const std::vector<float> &dy, double eps);

} // namespace fa

#endif // FA_RUNTIME_LAYERNORMREFERENCE_H
