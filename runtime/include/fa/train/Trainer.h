//===- Trainer.h - Training the GPT model on one GPU ------------*- C++ -*-===//
//
// One training step: sample a batch (Data.h, stateless in the step number),
// forward and backward (GptModel.h), the gradients' global norm, then AdamW
// with clipping on the f32 master weights, which also writes the working
// copy the next forward reads. Nothing waits for the GPU but the loss that
// the caller asks for.
//
// The state a checkpoint holds (master weights, AdamW's moments, the step)
// is all there is: the batches and the schedule follow from the step, and
// every kernel is deterministic, so a run resumed at step k repeats the
// uninterrupted run's losses.
//
// Data parallel (a Communicator of W ranks): each rank takes `batch` rows of
// a global batch of W * batch (Data.h), and the gradients are averaged
// (GradientSync.h) before the step, so the run follows the single-process
// run of the global batch. Every rank starts from the same weights (they
// follow from the seed). With ZeRO-1 the f32 master weights and AdamW's
// moments are split into W shards: the gradients are reduce-scattered, each
// rank steps its shard and writes its part of the working copy, and the
// working copy is all-gathered. Validation batches are split over the ranks
// and their losses averaged. state() and restore() are collective (every
// rank calls them).
//
// With TrainOptions::cudaGraph the forward and backward, the bulk of a
// step's launches, are captured into a CUDA graph (Graph.h) on the second
// step this Trainer takes and replayed by every later step: the first runs
// eagerly, so that what a capture forbids (cuBLASLt's plans and their
// buffers, the driver's lazy loading) happens outside it. Each batch is
// copied into the same buffers before the replay; the optimizer (its
// per-step learning rate is an argument), the loss and the gradient norm
// are launched as without the graph, and so are evaluate()'s forwards. The
// graph repeats the eager step's kernels on the same buffers, so the losses
// are the same bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRAIN_TRAINER_H
#define FA_TRAIN_TRAINER_H

#include "fa/runtime/Context.h"
#include "fa/runtime/DeviceBuffer.h"
#include "fa/runtime/Graph.h"
#include "fa/runtime/KernelLibrary.h"
#include "fa/runtime/MemoryBudget.h"
#include "fa/runtime/Stream.h"
#include "fa/runtime/TuningCache.h"
#include "fa/train/Checkpoint.h"
#include "fa/train/Comm.h"
#include "fa/train/Data.h"
#include "fa/train/GptConfig.h"
#include "fa/train/GptModel.h"
#include "fa/train/GradientSync.h"
#include "fa/train/Matmul.h"
#include "fa/train/Schedule.h"
#include "fa/train/StepProfile.h"
#include "fa/train/TrainKernels.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fa::train {

struct TrainOptions {
  GptConfig model;
  std::int64_t batch = 32;
  DType dtype = DType::BF16;
  std::int64_t steps = 2000;
  LrSchedule schedule;
  AdamWStep adam; // lr and step are set per step.
  std::uint64_t seed = 1337;
  /// Dropout probability of the training forwards (Dropout.h: embeddings,
  /// attention, residual branches), 0 <= p < 1; its masks follow from
  /// `seed` and the step.
  float dropout = 0;
  /// GptModel::setEpilogues: which GELU and bias-gradient work runs in
  /// cuBLASLt's products.
  EpilogueFusion epilogues;
  /// GptKernels::load's views: attention reads q, k, v in place from the
  /// fused qkv through the library's views twins (true), or runs the
  /// contiguous kernels on copies of the heads.
  bool headViews = true;
  /// GptModel::setWeightGradientStream: the backward's dW products on a
  /// second stream, beside its critical path. On by default: with the bias
  /// gradients in a kernel of their own on that stream (EpilogueFusion's
  /// default) it made the 85M step 3.0% and the 10.8M one 1.9% faster on an
  /// H100 (bench/results/2026-12-07-train-ce-bias-stream).
  bool weightGradStream = true;
  /// The tokens (TrainingData::load(data, model.vocab, seed) reads them).
  DataOptions data;
  std::int64_t evalBatches = 20;
  /// How gradients are averaged over ranks (ignored without a communicator).
  SyncMode sync = SyncMode::Flat;
  double bucketMegabytes = 25; // SyncMode::Overlap's buckets.
  /// Replay the forward and backward from a CUDA graph (see above); needs
  /// what checkCudaGraphOptions accepts.
  bool cudaGraph = false;
};

/// Throws, naming the fa-run option to change, when options.cudaGraph is
/// set with what a graph cannot replay: dropout (its masks follow from the
/// step, which the dropout kernels take as an argument, and a graph replays
/// the captured step's arguments); with `dataParallel`, the overlapped
/// gradient sync (its all-reduces start from inside the backward, on a
/// communication stream; flat, naive and ZeRO-1 average the gradients after
/// the backward, outside the graph); with `profile`, steps timed phase by
/// phase (StepProfile.h: events between the phases' launches).
void checkCudaGraphOptions(const TrainOptions &options, bool dataParallel,
                           bool profile = false);

/// The CUDA graph of the forward and backward, once captured.
struct StepGraphInfo {
  std::int64_t capturedAt = 0; // The step (0-based) that captured it.
  std::size_t nodes = 0;       // Its kernel launches, memsets, ...
};

/// What one step measured.
struct StepResult {
  std::int64_t step = 0; // 0-based, the step just taken.
  double loss = 0;       // Mean training loss of the step's batch.
  double gradNorm = 0;   // Before clipping.
  float lr = 0;
};

/// The model, its parameters and optimizer state, and the data on one GPU.
class Trainer {
public:
  /// `comm` null: one process; else this rank of a data-parallel run.
  /// `data`: TrainingData::load(options.data, ...), loaded by the caller so
  /// that a bad file fails before any GPU work.
  Trainer(const TrainOptions &options, TrainingData data,
          const Context &context, const KernelLibrary &library,
          const TuningCache *cache, Communicator *comm = nullptr);
  ~Trainer();

  /// Takes step number `nextStep()` and advances; waits for the loss.
  /// `profile`: times the step's phases into profile() (StepProfile.h).
  StepResult step(bool profile = false);
  /// The phases of the steps taken with `profile`, summed.
  const ProfileTotals &profile() const { return profiler.totals(); }
  /// Mean validation loss over options.evalBatches batches (forward only).
  double evaluate();
  std::int64_t nextStep() const { return stepIndex; }
  /// With options.cudaGraph, the graph once a step has captured it.
  std::optional<StepGraphInfo> stepGraph() const { return graphInfo; }

  /// The state a checkpoint holds (downloads the weights and moments).
  TrainState state();
  /// Continues from a checkpoint of a run with the same model and
  /// hyperparameters; throws, naming the difference, otherwise.
  void restore(const TrainState &state);
  /// The JSON text of the options that fix the loss curve (model, batch,
  /// dtype, schedule, AdamW, seed, data), stored in checkpoints.
  std::string hyperparameters() const;

  const ParameterLayout &parameterLayout() const { return layout; }
  const GptKernels &modelKernels() const { return *kernels; }
  /// Tokens per step on this rank: batch * seq.
  std::int64_t tokensPerStep() const;
  /// Bytes of the f32 master weights and AdamW's two moments this rank
  /// holds (ZeRO-1: its shard).
  std::size_t optimizerStateBytes() const;
  /// The device and host memory a rank of a `worldSize`-rank run of
  /// `options` will allocate, counted before anything is (overflow-checked).
  static MemoryBudget memoryBudget(const TrainOptions &options, int worldSize);
  int rank() const { return comm ? comm->rank() : 0; }
  int worldSize() const { return comm ? comm->worldSize() : 1; }
  /// Model FLOPs per token as nanoGPT counts them (6N + 12 L T C, N the
  /// parameters without the position table).
  double flopsPerToken() const;
  std::size_t activationBytes() const { return model->activationBytes(); }

private:
  void uploadBatch(const std::vector<std::int32_t> &tokens,
                   const std::vector<std::int32_t> &targets);
  /// Also copies every step scalar to hostScalars.
  double meanLoss(bool overRanks, const std::string &what);
  /// This rank's part of the flat array `values` (layout size) into
  /// `buffer` (shardSize elements; all of it without ZeRO-1).
  void uploadShard(DeviceBuffer &buffer, const std::vector<float> &values);
  /// The f32 master weights (this rank's shard) and the whole working copy
  /// from the flat `weights`.
  void loadWeights(const std::vector<float> &weights);
  /// The model's forward and backward of step stepIndex on the batch in
  /// tokens and targets: launched, or (options.cudaGraph) from the second
  /// step on the graph that step captured, launched.
  void forwardBackward();
  void averageGradients();
  void optimizerStep(float lr);
  /// Waits for the stream; bounded by the communicator's timeout when there
  /// is one (a dead peer then ends this rank with an error, not a hang).
  void waitForGpu(const std::string &what);
  /// Zero1: the full f32 array gathered from every rank's shard of `shard`.
  std::vector<float> gatherShards(const DeviceBuffer &shard,
                                  const std::string &what);
  bool sharded() const;
  /// Where this rank's part of the flat f32 state starts (0 unless ZeRO-1).
  std::int64_t shardBegin() const { return sharded() ? rank() * shardSize : 0; }

  TrainOptions options;
  ParameterLayout layout;
  Communicator *comm;
  // Elements of the flat arrays: the layout's, padded for ZeRO-1 to W equal
  // shards of shardSize (multiples of 8 elements).
  std::int64_t shardSize, paddedSize;
  std::unique_ptr<GptKernels> kernels;
  TrainKernels trainKernels;
  Matmul matmul;
  Stream stream;
  TrainingData corpus;
  CorpusSplit data; // Points into corpus.
  std::unique_ptr<BatchSampler> sampler;
  // working and grads: paddedSize elements; master, adamM, adamV, decayMask
  // (and ZeRO-1's gradShard): shardSize.
  DeviceBuffer master, working, grads, adamM, adamV, decayMask, gradShard;
  DeviceBuffer tokens, targets, scalars, reduction;
  std::unique_ptr<GptModel> model;
  std::unique_ptr<DdpSync> ddp;
  std::int64_t stepIndex = 0;
  // A step ran in this Trainer (from a checkpoint too): the next may capture.
  bool tookStep = false;
  std::unique_ptr<GraphExec> graph;
  std::optional<StepGraphInfo> graphInfo;
  std::vector<std::int32_t> hostTokens, hostTargets;
  std::vector<float> hostScalars; // The step scalars, as meanLoss read them.
  StepProfiler profiler;
};

} // namespace fa::train

#endif // FA_TRAIN_TRAINER_H
