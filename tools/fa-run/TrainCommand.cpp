//===- TrainCommand.cpp - `fa-run train` ----------------------------------===//

#include "TrainCommand.h"

#include "GradCheckCommand.h"

#include "fa/runtime/CheckedMath.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/MemoryBudget.h"
#include "fa/runtime/Nvtx.h"
#include "fa/train/Launcher.h"
#include "fa/train/Rendezvous.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <utility>

namespace fa {

namespace {

void addOptimizerOptions(CLI::App *command, train::TrainOptions &t) {
  command->add_option("--lr", t.schedule.maxLr, "Peak learning rate")
      ->capture_default_str();
  command
      ->add_option("--min-lr", t.schedule.minLr,
                   "Learning rate at the end of the cosine decay")
      ->capture_default_str();
  command
      ->add_option("--weight-decay", t.adam.weightDecay,
                   "AdamW's decoupled weight decay (matrices and "
                   "embeddings only)")
      ->capture_default_str();
  command->add_option("--beta1", t.adam.beta1)->capture_default_str();
  command->add_option("--beta2", t.adam.beta2)->capture_default_str();
  command
      ->add_option("--grad-clip", t.adam.maxNorm,
                   "Largest global gradient norm (0: no clipping)")
      ->capture_default_str();
}

void addDataOptions(CLI::App *command, TrainCommandOptions &o) {
  train::TrainOptions &t = o.train;
  command->add_option("--data", t.data.path,
                      "Training data in --data-format (default: a built-in "
                      "synthetic text, bytes)");
  command
      ->add_option("--data-format", o.dataFormat,
                   "bytes: every byte of --data is a token (vocab 256); u16: "
                   "uint16 little-endian tokens as nanoGPT's train.bin or "
                   "llm.c's shards (whose header, magic 20240520, is read "
                   "and checked) write them; needs --vocab")
      ->capture_default_str()
      ->check(CLI::IsMember({"bytes", "u16"}));
  command->add_option("--val-data", t.data.validationPath,
                      "Validation data in --data-format (default: the last "
                      "--val-fraction of --data)");
  command
      ->add_option("--synthetic-bytes", t.data.syntheticBytes,
                   "Size of the synthetic corpus")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--val-fraction", t.data.valFraction,
                   "The corpus's last fraction, held out for validation "
                   "(without --val-data)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.9));
  command
      ->add_option("--eval-batches", t.evalBatches,
                   "Validation batches per evaluation")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--seed", t.seed,
                   "Initial weights, batches (the whole run follows)")
      ->capture_default_str();
}

/// Dense bf16 tensor-core peak of the GPUs we know, TFLOP/s (datasheets);
/// 0 when unknown (MFU is then not printed).
double datasheetPeakTflops(const std::string &deviceName, DType dtype) {
  bool hopper = deviceName.find("H100") != std::string::npos ||
                deviceName.find("H200") != std::string::npos;
  if (!hopper)
    return 0;
  return dtype == DType::F32 ? 67.0 : 989.4;
}

std::string gib(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB",
                static_cast<double>(bytes) / (1 << 30));
  return text;
}

/// Tokens per second over a window of steps, and MFU from it.
struct Throughput {
  double tokensPerSecond = 0;
  double mfu = 0; // Fraction; 0 when the peak is unknown.
};

class Progress {
public:
  /// Silent unless `leader` (rank 0).
  Progress(const TrainCommandOptions &o, const train::Trainer &trainer,
           double peakTflops, bool leader)
      : options(o), trainer(trainer), peak(peakTflops), leader(leader) {
    if (leader && !o.logPath.empty()) {
      log.open(o.logPath, o.resume ? std::ios::app : std::ios::trunc);
      if (!log)
        throw Error("opening the training log " + o.logPath + " for writing");
    }
    restart();
  }

  void restart() {
    windowStart = std::chrono::steady_clock::now();
    windowSteps = 0;
  }
  void countStep() { ++windowSteps; }

  Throughput throughput() const {
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - windowStart)
                         .count();
    Throughput t;
    if (windowSteps == 0 || seconds <= 0)
      return t;
    t.tokensPerSecond =
        static_cast<double>(windowSteps * trainer.tokensPerStep() *
                            trainer.worldSize()) /
        seconds;
    if (peak > 0)
      t.mfu = t.tokensPerSecond / trainer.worldSize() *
              trainer.flopsPerToken() / (peak * 1e12);
    return t;
  }

  void print(const train::StepResult &step, const Throughput &t,
             const std::optional<double> &valLoss) {
    if (!leader)
      return;
    char val[16] = "-";
    if (valLoss)
      std::snprintf(val, sizeof val, "%.4f", *valLoss);
    char line[256];
    int n = std::snprintf(
        line, sizeof line,
        "step %6lld/%lld | loss %.4f | val %s | lr %.2e | norm %.3f | "
        "%.1fk tok/s",
        static_cast<long long>(step.step + 1),
        static_cast<long long>(options.train.steps), step.loss, val, step.lr,
        step.gradNorm, t.tokensPerSecond / 1e3);
    if (trainer.worldSize() > 1)
      n += std::snprintf(line + n, sizeof line - n, " (%.1fk/GPU)",
                         t.tokensPerSecond / trainer.worldSize() / 1e3);
    if (peak > 0)
      n += std::snprintf(line + n, sizeof line - n, " | MFU %.1f%%",
                         100 * t.mfu);
    std::snprintf(line + n, sizeof line - n, " | peak %s",
                  gib(DeviceBuffer::allocated().peak()).c_str());
    std::cout << line << std::endl;
  }

  /// One JSON line per step in --log: the loss curve.
  void record(const train::StepResult &step,
              const std::optional<double> &valLoss) {
    if (!log.is_open())
      return;
    nlohmann::json entry = {{"step", step.step + 1},
                            {"loss", step.loss},
                            {"lr", step.lr},
                            {"grad_norm", step.gradNorm}};
    if (valLoss)
      entry["val_loss"] = *valLoss;
    log << entry.dump() << "\n";
    log.flush();
  }

private:
  const TrainCommandOptions &options;
  const train::Trainer &trainer;
  double peak;
  bool leader;
  std::ofstream log;
  std::chrono::steady_clock::time_point windowStart;
  std::int64_t windowSteps = 0;
};

/// "data: train.bin (u16), 900 training + 100 validation tokens".
std::string describeData(const train::TrainingData &data) {
  const train::CorpusSplit split = data.split();
  return "data: " + data.describe() + ", " + std::to_string(split.train.size) +
         " training + " + std::to_string(split.validation.size) +
         " validation tokens";
}

void printSetup(const TrainCommandOptions &o, const train::Trainer &trainer,
                const Context &context, const std::string &dataLine) {
  const train::TrainOptions &t = o.train;
  if (trainer.worldSize() > 1)
    std::cout << trainer.worldSize() << " ranks, gradients "
              << train::syncModeName(t.sync)
              << (t.sync == train::SyncMode::Overlap
                      ? " (" + std::to_string(t.bucketMegabytes) +
                            " MB buckets)"
                      : std::string())
              << ", global batch " << t.batch * trainer.worldSize() << "\n";
  std::cout << "training on " << context.device().name << ": "
            << t.model.describe() << ", "
            << trainer.parameterLayout().parameterCount() << " parameters\n"
            << "batch " << t.batch << " x seq " << t.model.seq << " = "
            << trainer.tokensPerStep() << " tokens/step, " << o.dtype
            << " activations, f32 master weights, AdamW (lr "
            << t.schedule.maxLr << " -> " << t.schedule.minLr << ", warm-up "
            << t.schedule.warmupSteps << ", wd " << t.adam.weightDecay
            << ", clip " << t.adam.maxNorm << ")"
            << (t.dropout > 0 ? ", dropout " + std::to_string(t.dropout)
                              : std::string())
            << "\n"
            << trainer.modelKernels().describe()
            << "products:           cuBLASLt epilogues "
            << t.epilogues.describe() << ", weight gradients "
            << (t.weightGradStream ? "on a second stream"
                                   : "on the training stream")
            << "\n"
            << "activations " << gib(trainer.activationBytes())
            << ", optimizer state (f32 weights and moments) "
            << gib(trainer.optimizerStateBytes()) << " per rank\n"
            << dataLine << "\n";
}

/// Collective: every rank gathers the state; rank 0 writes it.
void saveCheckpoint(const TrainCommandOptions &o, train::Trainer &trainer) {
  NvtxRange range{"checkpoint"};
  train::TrainState state = trainer.state();
  if (trainer.rank() != 0)
    return;
  train::saveCheckpoint(o.checkpointPath, state);
  std::cout << "checkpoint: step " << trainer.nextStep() << " -> "
            << o.checkpointPath << std::endl;
}

/// fa-run's arguments without --nproc-per-node (and its value).
std::vector<std::string> rankArguments(const std::vector<std::string> &args) {
  std::vector<std::string> kept;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--nproc-per-node") {
      ++i;
      continue;
    }
    if (args[i].rfind("--nproc-per-node=", 0) == 0)
      continue;
    kept.push_back(args[i]);
  }
  return kept;
}

int launchRanks(const TrainCommandOptions &o) {
  std::cout << "launching " << o.nprocPerNode << " ranks on this node"
            << std::endl;
  train::LaunchResult result = train::launchLocalRanks(
      "/proc/self/exe", rankArguments(o.commandLine), o.nprocPerNode);
  if (result.exitCode != 0)
    std::cerr << "fa-run: " << result.failure << "\n";
  return result.exitCode;
}

std::unique_ptr<train::Communicator>
joinWorld(const train::WorldInfo &world, std::chrono::milliseconds timeout) {
  NvtxRange range{"join the NCCL world"};
  train::CommId id{};
  if (world.rank == 0)
    id = train::createCommId();
  id = train::exchangeCommId(world, id, timeout);
  return std::make_unique<train::Communicator>(id, world.rank, world.worldSize,
                                               timeout);
}

} // namespace

CLI::App *addTrainCommand(CLI::App &app, TrainCommandOptions &o) {
  CLI::App *command = app.add_subcommand(
      "train", "Trains a GPT-style model on the kernel library's attention "
               "and LayerNorm kernels (the bytes of a text file, or uint16 "
               "token shards, as tokens)");
  // nanoGPT's Tiny Shakespeare settings: a small model on a small corpus
  // takes a high learning rate and a short-memory second moment.
  o.train.schedule.maxLr = 1e-3f;
  o.train.schedule.minLr = 1e-4f;
  o.train.adam.beta2 = 0.99f;
  addModelOptions(command, o.train.model);
  command->get_option("--vocab")->each(
      [&o](const std::string &) { o.vocabGiven = true; });
  command
      ->add_option("--dropout", o.train.dropout,
                   "Dropout probability in training, as nanoGPT places it: "
                   "the embeddings, attention probabilities and both "
                   "residual branches (none in evaluation)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.99));
  addProductOptions(
      command, o.train.epilogues, o.train.weightGradStream,
      {"cuBLASLt epilogues instead of kernels of their own: none, all, or a "
       "list of gelu-forward, gelu-backward, bias-grad (the default is what "
       "was fastest on an H100 beside the weight-gradient stream; with "
       "--serial-weight-grads, all was)",
       "Run the backward's weight-gradient products (and, with the default "
       "--epilogues, the bias gradients) on a second stream beside the dx "
       "products, attention and LayerNorms, which wait for them only before "
       "overwriting what they read: the default (on an H100 the 85M step "
       "3.0% and the 10.8M one 1.9% faster than on the training stream)",
       "Run the weight-gradient products on the training stream, after each "
       "layer's dx products (same bits as the default stream)"});
  command->add_flag_callback(
      "--head-copies", [&o] { o.train.headViews = false; },
      "Copy q, k, v, the attention's output and their gradients to "
      "[B, H, T, D] buffers instead of reading them in place from the fused "
      "qkv (to measure the copies)");
  command->add_option("--batch", o.train.batch, "Sequences per step")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_option("--dtype", o.dtype, "Activations: bf16 or f32")
      ->capture_default_str()
      ->check(CLI::IsMember({"bf16", "f32"}));
  command->add_option("--steps", o.train.steps, "Training steps")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--warmup", o.warmupSteps,
                   "Steps of linear warm-up, at most --steps. Default: "
                   "min(100, steps / 10)")
      ->check(CLI::NonNegativeNumber);
  addOptimizerOptions(command, o.train);
  addDataOptions(command, o);
  command->add_option("--log-every", o.logEvery, "Steps between progress lines")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--eval-every", o.evalEvery,
                   "Steps between validation losses (and at the end)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_option("--log", o.logPath,
                      "Write one JSON line per step (loss, val_loss, lr, "
                      "grad_norm) to this file");
  command->add_option("--checkpoint", o.checkpointPath,
                      "Checkpoint file (written at the end and every "
                      "--checkpoint-every steps)");
  command
      ->add_option("--checkpoint-every", o.checkpointEvery,
                   "Steps between checkpoints (0: only at the end)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command->add_flag("--resume", o.resume,
                    "Continue from --checkpoint (which must exist)");
  command
      ->add_option("--stop-at", o.stopAt,
                   "Stop after this step, as an interruption would (the "
                   "learning-rate schedule still spans --steps)")
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--nproc-per-node", o.nprocPerNode,
                   "Start this many ranks on this node, one per GPU (data "
                   "parallel; --batch is per rank)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--ddp", o.ddp,
                   "How ranks average gradients: naive (one all-reduce per "
                   "tensor), flat (one of all), overlap (buckets during the "
                   "backward), zero1 (reduce-scatter, sharded AdamW). Over "
                   "NVLink (2 H200s) flat and zero1 were fastest: overlap's "
                   "all-reduces slow the backward's kernels more than they "
                   "hide. Given to a single process, it runs on an NCCL "
                   "world of one")
      ->each([&o](const std::string &) { o.ddpGiven = true; })
      ->capture_default_str()
      ->check(CLI::IsMember({"naive", "flat", "overlap", "zero1"}));
  command
      ->add_option("--bucket-mb", o.train.bucketMegabytes,
                   "Bucket size of --ddp overlap, MB")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--nccl-timeout", o.ncclTimeoutSeconds,
                   "Seconds a rank waits for the others (joining, each "
                   "collective) before it gives up with an error")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_flag(
      "--cuda-graph", o.train.cudaGraph,
      "Capture the forward and backward (attention, LayerNorm, matmuls, "
      "elementwise kernels) into a CUDA graph on the second step and replay "
      "it every later step: one launch instead of hundreds. The first step, "
      "AdamW, the loss and validation run as without it. Not with --dropout "
      "(its per-step seeds are kernel arguments), --profile (events between "
      "phases) or --ddp overlap (all-reduces inside the backward)");
  command->add_flag(
      "--profile", o.profile,
      "Print where the step's time goes, phase by phase (attention, "
      "LayerNorm, matmuls, embedding, heads layout, bias grad, GELU, "
      "residual, loss, optimizer, communication, idle), timed with CUDA events "
      "over --profile-steps steps after up to "
      "10 warm-up steps");
  command
      ->add_option("--profile-steps", o.profileSteps,
                   "Steps --profile times (left out of the throughput line)")
      ->each([&o](const std::string &) { o.profileStepsGiven = true; })
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_option("--profile-json", o.profileJsonPath,
                      "Also write --profile's table as JSON to this file");
  command->add_option("--peak-tflops", o.peakTflops,
                      "The GPU's dense peak for MFU (default: the datasheet "
                      "value of H100/H200)");
  addKernelsOption(command, o.gpu);
  addDeviceOptions(command, o.gpu);
  return command;
}

namespace {
int trainRank(TrainCommandOptions &o, train::TrainingData data,
              const train::WorldInfo &world, const MemoryBudget &budget);

/// "fa-run train (6 layers x 384, batch 64 x seq 256, bf16)" for errors.
std::string describeRun(const train::TrainOptions &t,
                        const train::WorldInfo &world) {
  std::string text = "fa-run train (" + std::to_string(t.model.layers) +
                     " layers x " + std::to_string(t.model.dModel) +
                     ", batch " + std::to_string(t.batch) + " x seq " +
                     std::to_string(t.model.seq) + ", " + dtypeName(t.dtype);
  if (world.worldSize > 1)
    text += ", rank of " + std::to_string(world.worldSize);
  return text + ")";
}
} // namespace

namespace {

/// The option combinations refused before anything runs, each message
/// naming the options to change.
void checkTrainOptions(const TrainCommandOptions &o) {
  const train::TrainOptions &t = o.train;
  checkModelOptions(t.model);
  if (o.warmupSteps && *o.warmupSteps > t.steps)
    throw Error("--warmup " + std::to_string(*o.warmupSteps) +
                " is more than --steps " + std::to_string(t.steps) +
                ": lower --warmup or raise --steps");
  auto number = [](double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", value);
    return std::string(text);
  };
  const train::LrSchedule &schedule = t.schedule;
  if (!std::isfinite(schedule.maxLr) || !(schedule.maxLr > 0))
    throw Error("--lr " + number(schedule.maxLr) +
                " must be positive and finite");
  if (!std::isfinite(schedule.minLr) || schedule.minLr < 0)
    throw Error("--min-lr " + number(schedule.minLr) +
                " must be non-negative and finite");
  if (schedule.minLr > schedule.maxLr)
    throw Error("--min-lr " + number(schedule.minLr) + " is above --lr " +
                number(schedule.maxLr) + ": lower --min-lr or raise --lr");
  for (auto [name, value] :
       {std::pair{"--beta1", t.adam.beta1}, std::pair{"--beta2", t.adam.beta2}})
    if (!(value >= 0 && value < 1))
      throw Error(std::string(name) + " " + number(value) +
                  " must be in [0, 1)");
  if (!std::isfinite(t.adam.weightDecay) || t.adam.weightDecay < 0)
    throw Error("--weight-decay " + number(t.adam.weightDecay) +
                " must be non-negative and finite");
  if (!std::isfinite(t.adam.maxNorm) || t.adam.maxNorm < 0)
    throw Error("--grad-clip " + number(t.adam.maxNorm) +
                " must be non-negative and finite (0: no clipping)");
  if (t.data.validationPath.empty() && !(t.data.valFraction > 0))
    throw Error("--val-fraction 0 leaves no validation data: raise "
                "--val-fraction or give --val-data");
  // u16 shards carry no vocabulary size, and one taken from the largest
  // token would depend on which tokens this file happens to hold (another
  // shard, or a resumed run on one, would build another model): the user
  // names the tokenizer's size.
  if (t.data.format == train::DataFormat::U16 && !o.vocabGiven)
    throw Error("--data-format u16 needs --vocab: the tokenizer's vocabulary "
                "size (50257 for GPT-2's, or 50304 padded as nanoGPT does; "
                "every token must be below it)");
  if (o.resume && o.checkpointPath.empty())
    throw Error("--resume needs --checkpoint");
  if (o.profileStepsGiven && !o.profile)
    throw Error("--profile-steps needs --profile");
  if (!o.profileJsonPath.empty() && !o.profile)
    throw Error("--profile-json needs --profile");
  if (o.checkpointEvery > 0 && o.checkpointPath.empty())
    throw Error("--checkpoint-every needs --checkpoint");
}

} // namespace

int runTrain(TrainCommandOptions &o) {
  train::TrainOptions &t = o.train;
  t.dtype = parseDType(o.dtype);
  t.sync = train::parseSyncMode(o.ddp);
  t.data.format = train::parseDataFormat(o.dataFormat);
  checkTrainOptions(o);
  t.schedule.totalSteps = t.steps;
  t.schedule.warmupSteps =
      o.warmupSteps.value_or(train::defaultWarmupSteps(t.steps));
  t.schedule.validate();

  train::WorldInfo world = train::worldFromEnvironment();
  train::checkCudaGraphOptions(
      t, o.nprocPerNode > 1 || world.worldSize > 1 || o.ddpGiven, o.profile);
  if (o.nprocPerNode > 1) {
    // The launcher checks for all the ranks it starts on this host.
    world.worldSize = o.nprocPerNode;
    MemoryBudget ranks;
    ranks.addHost(
        std::to_string(o.nprocPerNode) + " ranks",
        checkedMultiply<std::uint64_t>(
            train::Trainer::memoryBudget(t, world.worldSize).hostBytes(),
            o.nprocPerNode, "counting the ranks' host memory"));
    ranks.checkHost(describeRun(t, world), availableHostMemory());
    return launchRanks(o);
  }
  // The rank's memory, counted before anything is allocated: the host's
  // here, the GPU's once its context exists.
  MemoryBudget budget = train::Trainer::memoryBudget(t, world.worldSize);
  budget.checkHost(describeRun(t, world), availableHostMemory());

  try {
    // Before the GPU: a bad file or a corpus too short for --seq fails at
    // once.
    train::TrainingData data =
        train::TrainingData::load(t.data, t.model.vocab, t.seed);
    const train::BatchSampler lengthCheck(data.split(), t.batch, t.model.seq,
                                          t.seed);
    return trainRank(o, std::move(data), world, budget);
  } catch (const NoDeviceError &) {
    throw;
  } catch (const Error &error) {
    if (world.worldSize == 1)
      throw;
    // Every rank reports; the message says which one.
    throw Error("rank " + std::to_string(world.rank) + " of " +
                std::to_string(world.worldSize) + ": " + error.what());
  }
}

namespace {

int trainRank(TrainCommandOptions &o, train::TrainingData data,
              const train::WorldInfo &world, const MemoryBudget &budget) {
  train::TrainOptions &t = o.train;
  const bool leader = world.rank == 0;
  // A rank uses the GPU of its local rank.
  Context context(world.worldSize > 1 ? world.localRank : o.gpu.device);
  std::unique_ptr<train::Communicator> comm;
  if (world.worldSize > 1 || o.ddpGiven)
    comm = joinWorld(world, std::chrono::milliseconds(static_cast<long long>(
                                o.ncclTimeoutSeconds * 1000)));
  budget.checkDevice(describeRun(t, world), freeDeviceMemory());
  KernelLibrary library = KernelLibrary::load(o.gpu.kernelDirectory());
  std::optional<TuningCache> cache = TuningCache::loadIfPresent(
      defaultTuningCachePath(o.gpu.kernelDirectory()));
  const std::string dataLine = describeData(data);
  train::Trainer trainer(t, std::move(data), context, library,
                         cache ? &*cache : nullptr, comm.get());
  if (leader)
    printSetup(o, trainer, context, dataLine);
  if (o.resume) {
    trainer.restore(train::loadCheckpoint(o.checkpointPath));
    if (leader)
      std::cout << "resumed at step " << trainer.nextStep() << " from "
                << o.checkpointPath << std::endl;
  }

  double peak = o.peakTflops > 0
                    ? o.peakTflops
                    : datasheetPeakTflops(context.device().name, t.dtype);
  Progress progress(o, trainer, peak, leader);
  const std::int64_t lastStep =
      o.stopAt > 0 ? std::min(o.stopAt, t.steps) : t.steps;
  // The whole run's training throughput, its first steps (allocation,
  // cuBLASLt plans, the driver's first launches) left out.
  const std::int64_t firstTimed =
      trainer.nextStep() + std::min<std::int64_t>(10, t.steps / 5);
  double timedSeconds = 0;
  std::int64_t timedSteps = 0;
  // --profile: its steps record events and are left out of the throughput.
  const train::StepWindow profiled =
      o.profile
          ? train::profileWindow(trainer.nextStep(), lastStep, o.profileSteps)
          : train::StepWindow{};
  while (trainer.nextStep() < lastStep) {
    auto started = std::chrono::steady_clock::now();
    const bool profileStep = profiled.contains(trainer.nextStep());
    train::StepResult step = trainer.step(profileStep);
    if (step.step >= firstTimed && !profileStep) {
      timedSeconds += std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - started)
                          .count();
      ++timedSteps;
    }
    progress.countStep();
    std::int64_t done = step.step + 1;
    bool evaluate = done % o.evalEvery == 0 || done == t.steps;
    bool print = evaluate || done % o.logEvery == 0;
    // Throughput of the training steps only, measured before validation.
    Throughput throughput = progress.throughput();
    std::optional<double> valLoss;
    if (evaluate)
      valLoss = trainer.evaluate();
    if (print)
      progress.print(step, throughput, valLoss);
    progress.record(step, valLoss);
    if (o.checkpointEvery > 0 && done % o.checkpointEvery == 0 &&
        done < lastStep)
      saveCheckpoint(o, trainer);
    if (print)
      progress.restart();
  }
  if (!o.checkpointPath.empty())
    saveCheckpoint(o, trainer);
  DeviceBuffer::sampleDeviceUsage();
  if (!leader)
    return 0;
  if (timedSteps > 0) {
    double tokens = static_cast<double>(timedSteps * trainer.tokensPerStep() *
                                        trainer.worldSize());
    char line[200];
    std::snprintf(line, sizeof line,
                  "throughput: %.0f tokens/s, %.0f per GPU, %.3f ms/step "
                  "(steps %lld-%lld%s)",
                  tokens / timedSeconds,
                  tokens / timedSeconds / trainer.worldSize(),
                  1e3 * timedSeconds / static_cast<double>(timedSteps),
                  static_cast<long long>(firstTimed + 1),
                  // Every step from firstTimed on, but the profiled ones.
                  static_cast<long long>(lastStep),
                  o.profile ? ", profiled steps left out" : "");
    std::cout << line << std::endl;
  }
  if (const auto graph = trainer.stepGraph())
    std::cout << "cuda graph: the forward and backward (" << graph->nodes
              << " nodes) captured at step " << graph->capturedAt + 1
              << ", replayed through step " << lastStep << std::endl;
  if (o.profile && trainer.profile().steps > 0) {
    const train::ProfileSummary summary =
        train::summarizeProfile(trainer.profile());
    std::cout << train::formatProfileTable(
        summary, "steps " + std::to_string(profiled.begin + 1) + "-" +
                     std::to_string(profiled.end));
    if (!o.profileJsonPath.empty()) {
      std::ofstream json(o.profileJsonPath);
      json << train::profileJson(summary) << "\n";
      if (!json)
        throw Error("writing the step profile to " + o.profileJsonPath);
    }
  }
  std::cout << "peak device memory: " << gib(DeviceBuffer::allocated().peak())
            << " in buffers, " << gib(DeviceBuffer::deviceUsagePeak().usedBytes)
            << " used on the GPU" << std::endl;
  return 0;
}

} // namespace

} // namespace fa
