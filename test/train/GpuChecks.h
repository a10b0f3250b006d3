//===- GpuChecks.h - What the training GPU tests share ----------*- C++ -*-===//
//
// Poisoned device buffers (every byte 0xFF: NaN in every float type, so an
// element a kernel fails to write shows), comparisons against bounds that
// name the first elements off, and an fa::Error's message. Header-only.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TEST_TRAIN_GPUCHECKS_H
#define FA_TEST_TRAIN_GPUCHECKS_H

#include "fa/runtime/DType.h"
#include "fa/runtime/DeviceBuffer.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/Stream.h"
#include "fa/runtime/Tensor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace fa::traintest {

/// n elements of `dtype` (at least one), every byte fa::kNaNBytes.
inline DeviceBuffer poisoned(const std::string &name, std::int64_t n,
                             DType dtype, const Stream &stream) {
  DeviceBuffer buffer(name,
                      static_cast<std::size_t>(std::max<std::int64_t>(n, 1)) *
                          dtypeBytes(dtype));
  buffer.fill(kNaNBytes, stream.get());
  return buffer;
}

/// Expects |actual[i] - expected[i]| <= bound[i] everywhere (NaN fails),
/// naming the first few elements that are not.
inline void expectWithin(const std::vector<float> &actual,
                         const std::vector<double> &expected,
                         const std::vector<double> &bound,
                         const std::string &what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  std::int64_t failures = 0;
  std::ostringstream examples;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double error = std::fabs(actual[i] - expected[i]);
    if (error <= bound[i]) // False for NaN.
      continue;
    if (failures++ < 5)
      examples << " [" << i << "] " << actual[i] << " vs " << expected[i]
               << " (bound " << bound[i] << ")";
  }
  EXPECT_EQ(failures, 0) << what << " (of " << actual.size()
                         << "):" << examples.str();
}

/// The message of the fa::Error `function` throws, or "no error".
inline std::string errorMessage(const std::function<void()> &function) {
  try {
    function();
  } catch (const Error &error) {
    return error.what();
  }
  return "no error";
}

} // namespace fa::traintest

#endif // FA_TEST_TRAIN_GPUCHECKS_H
