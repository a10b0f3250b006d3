//===- LayerNormCommand.h - `fa-run layernorm` ------------------*- C++ -*-===//

#ifndef FA_RUN_LAYERNORMCOMMAND_H
#define FA_RUN_LAYERNORMCOMMAND_H

#include "GpuRunOptions.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace fa {

struct LayerNormOptions : GpuRunOptions {
  // Problem from sizes (random inputs)...
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::uint64_t seed = 0;
  // ...or from the user's .npy files.
  std::string xPath, weightPath, biasPath, dyPath;
  std::string yPath, meanPath, rstdPath, dxPath, dweightPath, dbiasPath;

  std::string dtype;
  double eps = 1e-5;
  bool grad = false;
  bool check = false;
  double rtol = 0; // 0: each output's default.
  bool bench = false;
  // --kernel / --backward-kernel: run these library kernels (by name)
  // instead of the ones the row length picks.
  std::string kernelName, backwardKernelName;
};

/// Declares the subcommand's options on `app`, which fill `options`.
CLI::App *addLayerNormCommand(CLI::App &app, LayerNormOptions &options);

/// Runs it; returns the exit code (1 when --check fails).
int runLayerNorm(const LayerNormOptions &options);

} // namespace fa

#endif // FA_RUN_LAYERNORMCOMMAND_H
