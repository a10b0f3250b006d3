//===- Compare.h - Distance of an output from its reference ----*- C++ -*-===//

#ifndef FA_RUNTIME_COMPARE_H
#define FA_RUNTIME_COMPARE_H

#include "fa/runtime/DType.h"

#include <cstdint>
#include <vector>

namespace fa {

struct ErrorStats {
  /// max |actual - reference| over the elements that are not NaN.
  double maxAbs = 0;
  /// ||actual - reference|| / ||reference|| (Frobenius norms) over the
  /// elements that are not NaN; the absolute norm if the reference is zero.
  double relative = 0;
  /// Outputs are poisoned with NaN before a kernel runs, so a NaN was never
  /// written (or was computed as NaN): either way a failure.
  std::int64_t nanCount = 0;
  std::int64_t count = 0;

  bool passes(double relativeTolerance) const {
    return nanCount == 0 && relative <= relativeTolerance;
  }
};

ErrorStats compareWithReference(const std::vector<float> &actual,
                                const std::vector<double> &reference);

/// The relative error an attention check accepts by default for a kernel
/// dtype: for out and lse, and for the backward's gradients. Every tool that
/// checks attention kernels (fa-run, fa-handwritten) judges by these.
double defaultRelativeTolerance(DType dtype);
double defaultGradientTolerance(DType dtype);

/// The relative error --check accepts by default for an output held in
/// `dtype`: y and dx in the kernel's dtype, mean, rstd, dweight and dbias in
/// f32 (which every kernel computes in).
double defaultLayerNormTolerance(DType dtype);

} // namespace fa

#endif // FA_RUNTIME_COMPARE_H
