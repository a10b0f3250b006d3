//===- CpuGpt.h - The GPT model's loss and gradients in fp64 ----*- C++ -*-===//
//
// What the GPU training step is gradient-checked against: the forward of
// GptConfig.h computed on the CPU in double, and its analytic backward (every
// activation stored by the forward, as llm.c's train_gpt2.c does). Parameters
// are the flat layout of ParameterLayout, widened to double; gradients come
// back in the same layout (padding 0; a tied wte gets both its embedding and
// its head gradient). Meant for tiny configurations: plain loops, no threads.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRAIN_CPUGPT_H
#define FA_TRAIN_CPUGPT_H

#include "fa/train/Dropout.h"
#include "fa/train/GptConfig.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace fa::train {

struct CpuGptResult {
  double loss = 0; // Mean over the batch * seq positions.
  /// Flat, layout.totalSize() elements at the parameters' offsets; padding 0.
  std::vector<double> gradients;
};

// Every function below takes:
//   tokens, targets  int32 [batch, seq], row-major, each in [0, vocab); seq
//                    may be below config.seq (positions 0..seq-1 use wpe rows
//                    0..seq-1).
//   parameters       flat, layout.totalSize() doubles; layout must be
//                    ParameterLayout(config).
//   dropout          none: nothing is dropped; else the training forward's
//                    masks (Dropout.h), the GPU's bit for bit.
// and throws fa::Error naming the mismatch for a wrong size, a layout of
// another configuration, a token or target out of range or a p outside
// [0, 1).

/// The mean cross-entropy loss.
double cpuGptLoss(const GptConfig &config, const ParameterLayout &layout,
                  const std::vector<double> &parameters,
                  const std::vector<std::int32_t> &tokens,
                  const std::vector<std::int32_t> &targets, std::int64_t batch,
                  std::int64_t seq,
                  const std::optional<DropoutDraw> &dropout = std::nullopt);

/// The loss of every position, [batch, seq] row-major (their mean is
/// cpuGptLoss): lets tests see that position t depends on tokens 0..t only.
std::vector<double>
cpuGptPositionLosses(const GptConfig &config, const ParameterLayout &layout,
                     const std::vector<double> &parameters,
                     const std::vector<std::int32_t> &tokens,
                     const std::vector<std::int32_t> &targets,
                     std::int64_t batch, std::int64_t seq,
                     const std::optional<DropoutDraw> &dropout = std::nullopt);

/// The mean loss and its gradient with respect to every parameter.
CpuGptResult cpuGptLossAndGradients(
    const GptConfig &config, const ParameterLayout &layout,
    const std::vector<double> &parameters,
    const std::vector<std::int32_t> &tokens,
    const std::vector<std::int32_t> &targets, std::int64_t batch,
    std::int64_t seq, const std::optional<DropoutDraw> &dropout = std::nullopt);

} // namespace fa::train

#endif // FA_TRAIN_CPUGPT_H
