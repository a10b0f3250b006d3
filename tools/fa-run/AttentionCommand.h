//===- AttentionCommand.h - `fa-run attention` ------------------*- C++ -*-===//

#ifndef FA_RUN_ATTENTIONCOMMAND_H
#define FA_RUN_ATTENTIONCOMMAND_H

#include "GpuRunOptions.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace fa {

struct AttentionOptions : GpuRunOptions {
  // Problem from sizes (random inputs)...
  std::int64_t batch = 0;
  std::int64_t heads = 0;
  std::int64_t kvHeads = 0; // 0: same as heads.
  std::int64_t seq = 0;
  std::int64_t kvSeq = 0; // 0: same as seq.
  std::int64_t dim = 0;
  std::uint64_t seed = 0;
  // ...or from the user's .npy files.
  std::string qPath, kPath, vPath, outPath, lsePath;
  // The backward's (--grad): dout from a file (else random normal), and where
  // to write the gradients.
  std::string doutPath, dqPath, dkPath, dvPath;

  std::string dtype;
  bool causal = false;
  bool grad = false;
  bool check = false;
  std::string reference = "auto";
  double rtol = 0; // 0: the default of the dtype and the output.
  bool bench = false;
  std::string tuningPath; // Empty: <kernelDir>/tuning.json if present.
  bool noTuning = false;
  std::string kernelName; // --kernel: run this forward kernel of the group.
  // --backward-kernel: with --grad, this attention_bwd (dq) kernel and its
  // companions.
  std::string backwardKernelName;
};

/// Declares the subcommand's options on `app`, which fill `options`.
CLI::App *addAttentionCommand(CLI::App &app, AttentionOptions &options);

/// Runs it; returns the exit code (1 when --check fails).
int runAttention(const AttentionOptions &options);

} // namespace fa

#endif // FA_RUN_ATTENTIONCOMMAND_H
