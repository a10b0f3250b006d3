//===- GradCheck.h - The GPU model's gradients against fp64 -----*- C++ -*-===//
//
// One forward and backward of GptModel on the GPU against CpuGpt.h's fp64
// loss and gradients, on the same (dtype-rounded) parameters and a random
// batch, compared parameter tensor by parameter tensor:
//   error = ||g_gpu - g_fp64||_2 / ||g_fp64||_2.
// The gradients start as NaN, so any that the backward accumulates into
// instead of writing (across steps, that would add the last step's) fails.
// Parameters start from GPT-2's initialisation with noise on the biases and
// LayerNorm weights (which start at 0 and 1), so that every tensor has a
// gradient worth comparing.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRAIN_GRADCHECK_H
#define FA_TRAIN_GRADCHECK_H

#include "fa/runtime/Context.h"
#include "fa/runtime/KernelLibrary.h"
#include "fa/train/GptConfig.h"
#include "fa/train/GptModel.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fa::train {

struct GradCheckOptions {
  GptConfig model;
  std::int64_t batch = 2;
  DType dtype = DType::F32;
  std::uint64_t seed = 1;
  /// Largest relative error allowed per tensor; 0: the dtype's default.
  double tolerance = 0;
  /// Dropout probability (Dropout.h), the masks of step kDropoutCheckStep
  /// drawn from `seed` on both sides; needs the attention dropout kernels
  /// (bf16 or f16: the library has none in f32).
  float dropout = 0;
  /// GptModel::setEpilogues.
  EpilogueFusion epilogues;
  /// GptKernels::load's views.
  bool headViews = true;
  /// GptModel::setWeightGradientStream (TrainOptions' default).
  bool weightGradStream = true;
};

/// The default tolerance: f32 runs every product in f32 (errors near 1e-6
/// are expected), bf16 rounds every activation to 8 bits of mantissa.
double defaultGradTolerance(DType dtype);

/// The step whose dropout masks a gradient check draws: not 0, so that the
/// attention masks' offsets (step * layers + layer) are too.
inline constexpr std::uint32_t kDropoutCheckStep = 3;

struct TensorGradError {
  std::string name;
  double error = 0;   // Relative L2 error.
  double maxAbs = 0;  // Largest |g_gpu - g_fp64|.
  double refNorm = 0; // ||g_fp64||_2.
  bool passed = false;
};

struct GradCheckResult {
  double gpuLoss = 0, referenceLoss = 0;
  double tolerance = 0;
  std::vector<TensorGradError> tensors;
  bool passed() const;
};

GradCheckResult runGradCheck(const GradCheckOptions &options,
                             const Context &context,
                             const KernelLibrary &library);

/// A table, one row per tensor, then the losses and a verdict.
std::string formatGradCheck(const GradCheckResult &result);

} // namespace fa::train

#endif // FA_TRAIN_GRADCHECK_H
