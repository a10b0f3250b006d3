//===- Compare.cpp --------------------------------------------------------===//

#include "fa/runtime/Compare.h"

#include "fa/runtime/Error.h"

#include <cmath>
#include <string>

namespace fa {

ErrorStats compareWithReference(const std::vector<float> &actual,
                                const std::vector<double> &reference) {
  if (actual.size() != reference.size())
    throw Error(
        "comparing with the reference: " + std::to_string(actual.size()) +
        " values against " + std::to_string(reference.size()));
  ErrorStats stats;
  stats.count = static_cast<std::int64_t>(actual.size());
  double errorSquares = 0, referenceSquares = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(actual[i])) {
      ++stats.nanCount;
      continue;
    }
    // The lse of a row that keeps no key is -inf in both: exact. An infinity
    // on one side only is an infinite error, which fails any tolerance.
    if (std::isinf(reference[i]) &&
        static_cast<double>(actual[i]) == reference[i])
      continue;
    double error = std::fabs(static_cast<double>(actual[i]) - reference[i]);
    stats.maxAbs = std::fmax(stats.maxAbs, error);
    errorSquares += error * error;
    referenceSquares += reference[i] * reference[i];
  }
  double errorNorm = std::sqrt(errorSquares);
  stats.relative = referenceSquares > 0
                       ? errorNorm / std::sqrt(referenceSquares)
                       : errorNorm;
  return stats;
}

double defaultRelativeTolerance(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return 2e-2;
  case DType::F16:
    return 5e-3;
  case DType::F32:
    return 2e-3; // Allows kernels that use TF32 tensor cores.
  }
  return 0;
}

double defaultGradientTolerance(DType dtype) {
  // Twice the forward's (2.5x for f32): the backward rounds P and dS to the
  // dtype for its tensor-core products, and dS = P * (dP - delta) loses
  // digits where dP is close to delta (computed from the rounded out).
  switch (dtype) {
  case DType::BF16:
    return 4e-2;
  case DType::F16:
    return 1e-2;
  case DType::F32:
    return 5e-3;
  }
  return 0;
}

double defaultLayerNormTolerance(DType dtype) {
  // Each output is one rounding of an f32 result, so bf16 and f16 outputs
  // are as far from fp64 as their rounding (relative RMS about 1e-3 and
  // 3e-4); f32 ones as f32 reductions over a row or a column.
  switch (dtype) {
  case DType::BF16:
    return 1e-2;
  case DType::F16:
    return 2e-3;
  case DType::F32:
    return 1e-4;
  }
  return 0;
}

} // namespace fa
