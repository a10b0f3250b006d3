//===- TrainCommand.h - `fa-run train` --------------------------*- C++ -*-===//
//
//   fa-run train --data ../shared/data/tinyshakespeare.txt --layers 6
//                --d-model 384 --heads 6 --seq 256 --batch 32 --steps 2000
//                --checkpoint run.ckpt --checkpoint-every 500 [--resume]
//
// Trains the GPT model (Trainer.h) and prints a progress line every
// --log-every steps: step, loss, validation loss (every --eval-every),
// learning rate, gradient norm, tokens/s, MFU and peak device memory.
// --log FILE writes one JSON object per step (the loss curve).
// Data parallel: `--nproc-per-node N` starts N ranks on this node; a rank
// started by torchrun, mpirun or Slurm finds its world in the environment
// (Rendezvous.h). `--ddp naive|flat|overlap|zero1` picks how gradients are
// averaged; --batch is per rank. Only rank 0 prints, logs and checkpoints.
// Checkpoints are written atomically (temporary file, then rename);
// --resume continues from --checkpoint; --stop-at K ends the run after step
// K as an interruption would (the schedule still spans --steps).
// --profile prints where the time of --profile-steps steps (after up to 10
// warm-up steps) went, phase by phase (StepProfile.h); the throughput line
// leaves those steps out.
// --cuda-graph replays each step's forward and backward from a CUDA graph
// captured on the second step (Trainer.h).
// Data: the bytes of --data, or with `--data-format u16 --vocab N` nanoGPT's
// or llm.c's uint16 token shards; --val-data, or the last --val-fraction.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUN_TRAINCOMMAND_H
#define FA_RUN_TRAINCOMMAND_H

#include "GpuRunOptions.h"

#include "fa/train/Trainer.h"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace fa {

struct TrainCommandOptions {
  GpuRunOptions gpu;
  train::TrainOptions train;
  std::string dtype = "bf16";
  std::int64_t logEvery = 10;
  std::int64_t evalEvery = 100;
  std::string logPath;
  std::string checkpointPath;
  std::int64_t checkpointEvery = 0;
  bool resume = false;
  /// Stop after this many steps (0: --steps), as if interrupted: the
  /// schedule still runs to --steps, and the checkpoint is written.
  std::int64_t stopAt = 0;
  /// Dense bf16 tensor-core peak for MFU; 0: known GPUs' datasheet value.
  double peakTflops = 0;
  int nprocPerNode = 1;
  std::string ddp = "flat"; // Measured fastest of the DDP modes over NVLink.
  /// --ddp was given: a single process then still runs the NCCL path, on a
  /// world of one (a check of the plumbing on one GPU).
  bool ddpGiven = false;
  double ncclTimeoutSeconds = 120;
  std::string dataFormat = "bytes"; // --data-format: bytes or u16.
  /// --vocab was given (u16 data needs it; bytes default to 256).
  bool vocabGiven = false;
  /// --warmup, when given; else train::defaultWarmupSteps(--steps).
  std::optional<std::int64_t> warmupSteps;
  /// --profile: time the phases of --profile-steps steps (StepProfile.h).
  bool profile = false;
  std::int64_t profileSteps = 20;
  bool profileStepsGiven = false;
  std::string profileJsonPath; // --profile-json: the table as JSON.
  /// fa-run's arguments after the program name, for the launcher.
  std::vector<std::string> commandLine;
};

CLI::App *addTrainCommand(CLI::App &app, TrainCommandOptions &options);
int runTrain(TrainCommandOptions &options);

} // namespace fa

#endif // FA_RUN_TRAINCOMMAND_H
