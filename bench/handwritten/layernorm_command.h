//===- layernorm_command.h - `fa-handwritten layernorm` ---------*- C++ -*-===//

#ifndef FA_BENCH_HANDWRITTEN_LAYERNORM_COMMAND_H
#define FA_BENCH_HANDWRITTEN_LAYERNORM_COMMAND_H

#include "subcommand.h"

#include <memory>

namespace fa::handwritten {

/// Adds `layernorm` to `app`: the hand-written LayerNorm forward (and with
/// --grad backward) on random inputs, checked and timed as `fa-run
/// layernorm` does the generated kernels.
std::unique_ptr<Subcommand> makeLayerNormCommand(CLI::App &app);

} // namespace fa::handwritten

#endif // FA_BENCH_HANDWRITTEN_LAYERNORM_COMMAND_H
