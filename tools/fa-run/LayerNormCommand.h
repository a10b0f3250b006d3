//===- LayerNormCommand.h - `fa-run layernorm` ------------------*- C++ -*-===//
//
//   fa-run layernorm --rows 4096 --cols 1024 --dtype bf16 --grad --check
//   fa-run layernorm --x x.npy --weight w.npy --bias b.npy --y y.npy
//                    --dtype f16 --eps 1e-6
//
// The LayerNorm forward kernel of the library that the row length picks
// (with --grad then the backward and its params kernel), or the named ones;
// run through OpRun's steps (OpCommand.h).
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUN_LAYERNORMCOMMAND_H
#define FA_RUN_LAYERNORMCOMMAND_H

#include "OpCommand.h"

#include <cstdint>
#include <string>

namespace fa {

/// What `fa-run layernorm` adds to the options of every op.
struct LayerNormOptions : OpRunOptions {
  double eps = 1e-5; // Added to the variance; a kernel parameter.
  // Problem from sizes (random inputs)...
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  // ...or from the user's .npy files.
  std::string xPath, weightPath, biasPath, dyPath;
  std::string yPath, meanPath, rstdPath, dxPath, dweightPath, dbiasPath;
};

/// Declares the subcommand's options on `app`, which fill `options`.
CLI::App *addLayerNormCommand(CLI::App &app, LayerNormOptions &options);

/// Runs it; returns the exit code (1 when --check fails).
int runLayerNorm(const LayerNormOptions &options);

} // namespace fa

#endif // FA_RUN_LAYERNORMCOMMAND_H
