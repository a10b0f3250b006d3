//===- AttentionCommand.h - `fa-run attention` ------------------*- C++ -*-===//
//
//   fa-run attention --batch 2 --heads 16 --kv-heads 4 --seq 4096 --dim 128
//                    --dtype bf16 --causal --grad --check --bench
//   fa-run attention --q q.npy --k k.npy --v v.npy --out o.npy --dtype f16
//   fa-run attention --batch 1 --heads 16 --seq 8192 --dim 128 --dtype bf16
//                    --window 1024,0 --softcap 30 --grad --check --bench
//
// One attention forward kernel of the library (with --grad then the
// backward's three kernels) of the variant the flags give
// (AttentionVariantOptions.h), chosen by the tuning cache or named; run
// through OpRun's steps (OpCommand.h).
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUN_ATTENTIONCOMMAND_H
#define FA_RUN_ATTENTIONCOMMAND_H

#include "AttentionVariantOptions.h"
#include "OpCommand.h"

#include <cstdint>
#include <string>

namespace fa {

/// What `fa-run attention` adds to the options of every op.
struct AttentionOptions : OpRunOptions {
  /// --causal and the variants' flags.
  VariantOptions variant;
  // Problem from sizes (random inputs)...
  std::int64_t batch = 0;
  std::int64_t heads = 0;
  std::int64_t kvHeads = 0; // 0: same as heads.
  std::int64_t seq = 0;
  std::int64_t kvSeq = 0; // 0: same as seq.
  std::int64_t dim = 0;
  // ...or from the user's .npy files.
  std::string qPath, kPath, vPath, outPath, lsePath;
  // The backward's (--grad): dout from a file (else random normal), and where
  // to write the gradients.
  std::string doutPath, dqPath, dkPath, dvPath;

  std::string reference = "auto";
  std::string tuningPath; // Empty: <kernelDir>/tuning.json if present.
  bool noTuning = false;
  // kernelName (--kernel) is a forward kernel of the group; with --grad,
  // backwardKernelName (--backward-kernel) an attention_bwd (dq) kernel,
  // which brings its companions.
};

/// Declares the subcommand's options on `app`, which fill `options`.
CLI::App *addAttentionCommand(CLI::App &app, AttentionOptions &options);

/// Runs it; returns the exit code (1 when --check fails).
int runAttention(const AttentionOptions &options);

} // namespace fa

#endif // FA_RUN_ATTENTIONCOMMAND_H
