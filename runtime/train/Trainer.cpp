//===- Trainer.cpp - Training the GPT model on one GPU or many ------------===//

#include "fa/train/Trainer.h"

#include "fa/runtime/CheckedMath.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/Nvtx.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <sstream>
#include <utility>

namespace fa::train {

namespace {

/// Device scalars of a step (f32 each).
enum Scalar {
  kGradNormSquared,
  kLossSum,
  kEvalLossSum, // Validation: sum of batch means, and their count.
  kEvalBatches,
  kScalarCount
};

CUdeviceptr scalar(const DeviceBuffer &scalars, Scalar which) {
  return scalars.get() + which * sizeof(float);
}

DeviceBuffer f32Buffer(const std::string &name, std::int64_t elements) {
  return DeviceBuffer(name, static_cast<std::size_t>(elements) * sizeof(float));
}

std::vector<float> downloadFloats(const DeviceBuffer &buffer) {
  return decode(buffer.download(), DType::F32);
}

/// 1 for the elements AdamW decays (matrices and embeddings), 0 elsewhere,
/// padding included; `size` elements.
Bytes decayMaskOf(const ParameterLayout &layout, std::int64_t size) {
  Bytes mask(static_cast<std::size_t>(size), 0);
  for (const ParameterTensor &tensor : layout.tensors())
    if (tensor.decayed())
      std::fill(mask.begin() + tensor.offset,
                mask.begin() + tensor.offset + tensor.size, 1);
  return mask;
}

bool zeroOne(const TrainOptions &options, const Communicator *comm) {
  return comm && options.sync == SyncMode::Zero1;
}

/// The elements of this rank's part of the flat f32 state: all of the
/// layout, or for ZeRO-1 a 1/W share rounded up to a multiple of 8 elements
/// (aligned collectives and AdamW slices).
std::int64_t shardSizeOf(std::int64_t parameters, bool sharded, int world) {
  if (!sharded)
    return parameters;
  std::int64_t shard = (parameters + world - 1) / world;
  return (shard + 7) / 8 * 8;
}

std::int64_t shardSizeOf(const ParameterLayout &layout,
                         const TrainOptions &options,
                         const Communicator *comm) {
  return shardSizeOf(layout.totalSize(), zeroOne(options, comm),
                     comm ? comm->worldSize() : 1);
}

} // namespace

void checkCudaGraphOptions(const TrainOptions &options, bool dataParallel,
                           bool profile) {
  if (!options.cudaGraph)
    return;
  if (options.dropout > 0) {
    std::ostringstream p;
    p << options.dropout;
    throw Error("--cuda-graph with --dropout " + p.str() +
                ": dropout's masks follow from the step, which the dropout "
                "kernels take as an argument, and a CUDA graph replays the "
                "captured step's arguments: leave out --dropout or "
                "--cuda-graph");
  }
  if (dataParallel && options.sync == SyncMode::Overlap)
    throw Error("--cuda-graph with --ddp overlap: overlap starts its "
                "all-reduces from inside the backward, on a communication "
                "stream, which the graph of the backward cannot hold: use "
                "--ddp flat or zero1 (they average the gradients after the "
                "backward), or leave out --cuda-graph");
  if (profile)
    throw Error("--cuda-graph with --profile: the profile times each phase "
                "between CUDA events, and a graph launches the phases as one: "
                "leave out one of the two");
}

Trainer::Trainer(const TrainOptions &options, TrainingData trainingData,
                 const Context &context, const KernelLibrary &library,
                 const TuningCache *cache, Communicator *comm)
    : options(options), layout(options.model), comm(comm),
      shardSize(shardSizeOf(layout, options, comm)),
      paddedSize(zeroOne(options, comm) ? shardSize * comm->worldSize()
                                        : layout.totalSize()),
      kernels(std::make_unique<GptKernels>(GptKernels::load(
          library, cache, context.device(), options.model, options.dtype,
          options.dropout > 0, options.headViews))),
      corpus(std::move(trainingData)), data(corpus.split()),
      master(f32Buffer("master weights", shardSize)),
      working("working weights", paddedSize * dtypeBytes(options.dtype)),
      grads(f32Buffer("gradients", paddedSize)),
      adamM(f32Buffer("AdamW first moments", shardSize)),
      adamV(f32Buffer("AdamW second moments", shardSize)),
      decayMask("weight decay mask", shardSize),
      gradShard(
          f32Buffer("gradient shard", zeroOne(options, comm) ? shardSize : 0)),
      tokens("tokens", options.batch * options.model.seq * 4),
      targets("targets", options.batch * options.model.seq * 4),
      scalars(f32Buffer("step scalars", kScalarCount)),
      reduction(
          f32Buffer("reduction workspace",
                    TrainKernels::reductionWorkspaceFloats(std::max(
                        paddedSize, options.batch * options.model.seq)))) {
  NvtxRange range{"set up training"};
  checkCudaGraphOptions(options, comm != nullptr);
  sampler =
      std::make_unique<BatchSampler>(data, options.batch, options.model.seq,
                                     options.seed, rank(), worldSize());
  // Every rank computes the same initial weights from the seed.
  loadWeights(initialParameters(layout, options.model, options.seed));
  Bytes mask = decayMaskOf(layout, paddedSize);
  decayMask.upload(Bytes(mask.begin() + shardBegin(),
                         mask.begin() + shardBegin() + shardSize));
  // Padding is never written by the model: zero gradients and moments keep
  // it (and AdamW's update of it) zero.
  grads.fill(0, stream.get());
  adamM.fill(0, stream.get());
  adamV.fill(0, stream.get());
  model = std::make_unique<GptModel>(
      options.model, options.batch, options.model.seq, options.dtype, *kernels,
      trainKernels, matmul, working.get(), grads.get(),
      DropoutDraw{options.dropout, options.seed, 0});
  if (comm && !sharded())
    ddp = std::make_unique<DdpSync>(options.sync, *comm, layout, grads.get(),
                                    options.bucketMegabytes);
  model->setEpilogues(options.epilogues);
  model->setWeightGradientStream(options.weightGradStream);
  model->setProfiler(&profiler);
  if (ddp)
    ddp->setProfiler(&profiler);
  profiler.totals().tokensPerStep = tokensPerStep() * worldSize();
  stream.synchronize();
}

Trainer::~Trainer() = default;

bool Trainer::sharded() const { return zeroOne(options, comm); }

std::int64_t Trainer::tokensPerStep() const {
  return options.batch * options.model.seq;
}

MemoryBudget Trainer::memoryBudget(const TrainOptions &options, int worldSize) {
  options.model.validate();
  const char *what = "counting the training run's memory";
  auto bytes = [&](std::int64_t elements, std::size_t elementBytes) {
    return static_cast<std::uint64_t>(checkedMultiply<std::int64_t>(
        elements, static_cast<std::int64_t>(elementBytes), what));
  };
  const ParameterLayout layout(options.model);
  // As the constructor allocates: ZeRO-1 ranks hold a shard of the f32
  // state and a padded copy of the rest.
  const bool sharded = options.sync == SyncMode::Zero1 && worldSize > 1;
  const std::int64_t shard =
      shardSizeOf(layout.totalSize(), sharded, worldSize);
  const std::int64_t padded =
      sharded ? checkedMultiply<std::int64_t>(shard, worldSize, what)
              : layout.totalSize();
  const std::int64_t tokens =
      checkedMultiply(options.batch, options.model.seq, what);
  MemoryBudget budget;
  budget.addDevice("f32 master weights and AdamW moments", bytes(shard, 12));
  budget.addDevice("working weights", bytes(padded, dtypeBytes(options.dtype)));
  budget.addDevice("f32 gradients",
                   bytes(sharded ? padded + shard : padded, 4));
  budget.addDevice("activations", GptModel::plannedActivationBytes(
                                      options.model, options.batch,
                                      options.model.seq, options.dtype));
  budget.addDevice("batches, decay mask and reduction workspace",
                   bytes(2 * tokens, 4) + bytes(shard, 1) +
                       bytes(TrainKernels::reductionWorkspaceFloats(
                                 std::max(padded, tokens)),
                             4));
  // The training stream's and, with the weight-gradient stream, its own.
  budget.addDevice("cuBLASLt workspaces",
                   Matmul::kDefaultWorkspaceBytes *
                       (options.weightGradStream ? 2 : 1));
  // The initial weights are drawn on the host (f32), with the decay mask.
  budget.addHost("initial weights and decay mask",
                 bytes(layout.totalSize(), 4) + bytes(padded, 1));
  budget.addHost("training and validation tokens", dataHostBytes(options.data));
  return budget;
}

std::size_t Trainer::optimizerStateBytes() const {
  return master.bytes() + adamM.bytes() + adamV.bytes();
}

double Trainer::flopsPerToken() const {
  const GptConfig &c = options.model;
  double parameters =
      static_cast<double>(layout.parameterCount() - layout.wpe().size);
  return 6.0 * parameters + 12.0 * c.layers * c.seq * c.dModel;
}

void Trainer::waitForGpu(const std::string &what) {
  if (comm)
    comm->wait(stream, what);
  else
    stream.synchronize();
}

void Trainer::uploadBatch(const std::vector<std::int32_t> &hostTokens,
                          const std::vector<std::int32_t> &hostTargets) {
  tokens.upload(tokenBytes(hostTokens));
  targets.upload(tokenBytes(hostTargets));
}

/// The mean of the last forward's per-position losses, summed on the GPU in
/// a fixed order (with `overRanks`, averaged over every rank's rows too);
/// waits for the stream.
double Trainer::meanLoss(bool overRanks, const std::string &what) {
  CUdeviceptr lossSum = scalar(scalars, kLossSum);
  {
    PhaseScope scope(&profiler, Phase::Loss, stream);
    trainKernels.sum(model->losses(), lossSum, model->rows(), reduction.get(),
                     stream);
  }
  if (comm && overRanks) {
    PhaseScope scope(&profiler, Phase::Communication, stream);
    comm->allReduce(lossSum, lossSum, 1, DType::F32, ReduceOp::Average, stream,
                    what);
  }
  waitForGpu(what);
  hostScalars = downloadFloats(scalars);
  return hostScalars[kLossSum] / static_cast<double>(model->rows());
}

/// DDP: the gradients averaged over the ranks in place; ZeRO-1: this rank's
/// shard of the average in gradShard.
void Trainer::averageGradients() {
  if (ddp)
    ddp->finish(stream);
  else if (sharded()) {
    PhaseScope scope(&profiler, Phase::Communication, stream);
    comm->reduceScatter(grads.get(), gradShard.get(), shardSize, DType::F32,
                        ReduceOp::Average, stream, "the gradients");
  }
}

void Trainer::optimizerStep(float lr) {
  NvtxRange range{"AdamW"};
  CUdeviceptr stepGrads = sharded() ? gradShard.get() : grads.get();
  CUdeviceptr normSquared = scalar(scalars, kGradNormSquared);
  {
    PhaseScope scope(&profiler, Phase::Optimizer, stream);
    trainKernels.sumOfSquares(stepGrads, normSquared, shardSize,
                              reduction.get(), stream);
  }
  if (sharded()) {
    PhaseScope scope(&profiler, Phase::Communication, stream);
    comm->allReduce(normSquared, normSquared, 1, DType::F32, ReduceOp::Sum,
                    stream, "the gradient norm");
  }
  AdamWStep hyper = options.adam;
  hyper.lr = lr;
  hyper.step = stepIndex + 1;
  const std::size_t elementBytes = dtypeBytes(options.dtype);
  CUdeviceptr workingShard = working.get() + shardBegin() * elementBytes;
  {
    PhaseScope scope(&profiler, Phase::Optimizer, stream);
    adamW(trainKernels, options.dtype, hyper, master.get(), stepGrads,
          adamM.get(), adamV.get(), decayMask.get(), normSquared, workingShard,
          shardSize, stream);
  }
  if (sharded()) {
    PhaseScope scope(&profiler, Phase::Communication, stream);
    comm->allGather(workingShard, working.get(), shardSize, options.dtype,
                    stream, "the updated weights");
  }
}

void Trainer::forwardBackward() {
  // Without dropout (checkCudaGraphOptions) the forward ignores the step:
  // nothing the graph captures depends on it.
  auto launches = [&] {
    model->forward(tokens.get(), targets.get(), true, stream,
                   static_cast<std::uint32_t>(stepIndex));
    model->backward(tokens.get(), stream, ddp ? ddp->listener() : nullptr);
  };
  // The first step runs eagerly: cuBLASLt's plans (their algorithms and
  // buffers) are made, and the driver loads what it loads lazily, outside
  // the capture, which refuses allocations and synchronous copies.
  if (!options.cudaGraph || !tookStep)
    return launches();
  if (!graph) {
    Graph captured = Graph::capture(stream, launches,
                                    "the training step's forward and backward");
    graph = std::make_unique<GraphExec>(captured);
    graphInfo = StepGraphInfo{stepIndex, captured.nodeCount()};
  }
  graph->launch(stream);
}

StepResult Trainer::step(bool profile) {
  NvtxRange range{"training step"};
  checkCudaGraphOptions(options, comm != nullptr, profile);
  // The step's wall time on the host clock: the previous step ended waiting
  // for its loss, so the GPU starts idle and the step ends on the host.
  const auto started = std::chrono::steady_clock::now();
  if (profile)
    profiler.beginStep();
  StepResult result;
  result.step = stepIndex;
  result.lr = learningRate(options.schedule, stepIndex);
  sampler->trainBatch(stepIndex, hostTokens, hostTargets);
  uploadBatch(hostTokens, hostTargets);
  forwardBackward();
  averageGradients();
  optimizerStep(result.lr);
  result.loss = meanLoss(true, "the training loss");
  tookStep = true;
  // meanLoss downloaded every step scalar, the gradient norm's too.
  result.gradNorm = std::sqrt(hostScalars[kGradNormSquared]);
  if (profile)
    profiler.endStep(std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - started)
                         .count());
  ++stepIndex;
  return result;
}

double Trainer::evaluate() {
  NvtxRange range{"validation"};
  // Rank r takes batches r, r + W, ...; their mean losses are summed over
  // the ranks and divided by how many there were.
  const std::int64_t batches =
      std::min(options.evalBatches, sampler->validationBatches());
  float sums[2] = {0, 0};
  for (std::int64_t index = rank(); index < batches; index += worldSize()) {
    sampler->validationBatch(index, hostTokens, hostTargets);
    uploadBatch(hostTokens, hostTargets);
    model->forward(tokens.get(), targets.get(), false, stream);
    sums[0] += static_cast<float>(meanLoss(false, "a validation batch"));
    sums[1] += 1;
  }
  if (!comm)
    return sums[0] / sums[1];
  Bytes bytes = scalars.download();
  std::memcpy(bytes.data() + kEvalLossSum * sizeof(float), sums, sizeof sums);
  scalars.upload(bytes);
  comm->allReduce(scalar(scalars, kEvalLossSum), scalar(scalars, kEvalLossSum),
                  2, DType::F32, ReduceOp::Sum, stream, "the validation loss");
  waitForGpu("the validation loss");
  std::vector<float> values = downloadFloats(scalars);
  return values[kEvalLossSum] / values[kEvalBatches];
}

std::string Trainer::hyperparameters() const {
  const TrainOptions &o = options;
  // The global batch, not the per-rank one: a run may resume on another
  // number of GPUs with the same global batch.
  nlohmann::json json = {{"model", o.model.describe()},
                         {"global_batch", o.batch * worldSize()},
                         {"dtype", dtypeName(o.dtype)},
                         {"max_lr", o.schedule.maxLr},
                         {"min_lr", o.schedule.minLr},
                         {"warmup_steps", o.schedule.warmupSteps},
                         {"total_steps", o.schedule.totalSteps},
                         {"beta1", o.adam.beta1},
                         {"beta2", o.adam.beta2},
                         {"adam_eps", o.adam.eps},
                         {"weight_decay", o.adam.weightDecay},
                         {"grad_clip", o.adam.maxNorm},
                         {"seed", o.seed},
                         {"data", corpus.describe()},
                         {"val_fraction", o.data.valFraction}};
  // Only when set, so that checkpoints of runs without dropout still match.
  if (o.dropout > 0)
    json["dropout"] = o.dropout;
  return json.dump();
}

std::vector<float> Trainer::gatherShards(const DeviceBuffer &shard,
                                         const std::string &what) {
  DeviceBuffer full = f32Buffer("gathered " + what, paddedSize);
  comm->allGather(shard.get(), full.get(), shardSize, DType::F32, stream, what);
  waitForGpu("gathering " + what);
  std::vector<float> values = downloadFloats(full);
  values.resize(static_cast<std::size_t>(layout.totalSize()));
  return values;
}

TrainState Trainer::state() {
  NvtxRange range{"download the training state"};
  waitForGpu("the last step");
  TrainState state;
  state.config = options.model;
  state.step = stepIndex;
  state.seed = options.seed;
  state.hyperparameters = hyperparameters();
  if (sharded()) {
    state.parameters = gatherShards(master, "the master weights");
    state.adamM = gatherShards(adamM, "AdamW's first moments");
    state.adamV = gatherShards(adamV, "AdamW's second moments");
  } else {
    state.parameters = downloadFloats(master);
    state.adamM = downloadFloats(adamM);
    state.adamV = downloadFloats(adamV);
  }
  return state;
}

void Trainer::uploadShard(DeviceBuffer &buffer,
                          const std::vector<float> &values) {
  // The shard of the padded array: elements past the layout are zero.
  std::vector<float> shard(static_cast<std::size_t>(shardSize), 0.0f);
  const auto begin = std::min(values.size(), std::size_t(shardBegin()));
  const auto end =
      std::min(values.size(), std::size_t(shardBegin() + shardSize));
  std::copy(values.begin() + begin, values.begin() + end, shard.begin());
  buffer.upload(encode(shard, DType::F32));
}

void Trainer::loadWeights(const std::vector<float> &weights) {
  uploadShard(master, weights);
  std::vector<float> padded(weights);
  padded.resize(static_cast<std::size_t>(paddedSize), 0.0f);
  DeviceBuffer full = f32Buffer("weights to load", paddedSize);
  full.upload(encode(padded, DType::F32));
  trainKernels.castFromF32(options.dtype, full.get(), working.get(), paddedSize,
                           stream);
  stream.synchronize();
}

void Trainer::restore(const TrainState &state) {
  NvtxRange range{"restore the training state"};
  if (state.hyperparameters != hyperparameters())
    throw Error("the checkpoint was written by a run with other settings:\n"
                "  checkpoint: " +
                state.hyperparameters + "\n  this run:   " + hyperparameters());
  loadWeights(state.parameters);
  uploadShard(adamM, state.adamM);
  uploadShard(adamV, state.adamV);
  stepIndex = state.step;
}

} // namespace fa::train
