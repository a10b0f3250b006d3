//===- attention_command.h - `fa-handwritten attention` ---------*- C++ -*-===//

#ifndef FA_BENCH_HANDWRITTEN_ATTENTION_COMMAND_H
#define FA_BENCH_HANDWRITTEN_ATTENTION_COMMAND_H

#include "subcommand.h"

#include <memory>

namespace fa::handwritten {

/// Adds `attention` to `app`: the hand-written FlashAttention-2-style
/// forward (and with --grad backward) on random inputs, checked and timed
/// as `fa-run attention` does the generated kernels.
std::unique_ptr<Subcommand> makeAttentionCommand(CLI::App &app);

} // namespace fa::handwritten

#endif // FA_BENCH_HANDWRITTEN_ATTENTION_COMMAND_H
