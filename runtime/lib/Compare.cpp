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

} // namespace fa
