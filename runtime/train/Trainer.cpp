//===- Trainer.cpp - Training the GPT model on one GPU --------------------===//

#include "fa/train/Trainer.h"

#include "fa/runtime/Error.h"
#include "fa/runtime/Nvtx.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>

namespace fa::train {

namespace {

/// Device scalars of a step (f32 each).
enum Scalar { kGradNormSquared, kLossSum, kScalarCount };

DeviceBuffer f32Buffer(const std::string &name, std::int64_t elements) {
  return DeviceBuffer(name, static_cast<std::size_t>(elements) * sizeof(float));
}

void uploadFloats(DeviceBuffer &buffer, const std::vector<float> &values) {
  Bytes bytes(buffer.bytes());
  std::memcpy(bytes.data(), values.data(), bytes.size());
  buffer.upload(bytes);
}

std::vector<float> downloadFloats(const DeviceBuffer &buffer) {
  Bytes bytes = buffer.download();
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

/// 1 for the elements AdamW decays (matrices and embeddings), 0 elsewhere,
/// padding included.
Bytes decayMaskOf(const ParameterLayout &layout) {
  Bytes mask(static_cast<std::size_t>(layout.totalSize()), 0);
  for (const ParameterTensor &tensor : layout.tensors())
    if (tensor.decayed())
      std::fill(mask.begin() + tensor.offset,
                mask.begin() + tensor.offset + tensor.size, 1);
  return mask;
}

ByteCorpus corpusOf(const TrainOptions &options) {
  return options.dataPath.empty()
             ? syntheticCorpus(options.syntheticBytes, options.seed)
             : loadCorpus(options.dataPath);
}

} // namespace

Trainer::Trainer(const TrainOptions &options, const Context &context,
                 const KernelLibrary &library, const TuningCache *cache)
    : options(options), layout(options.model),
      kernels(std::make_unique<GptKernels>(GptKernels::load(
          library, cache, context.device(), options.model, options.dtype))),
      corpus(corpusOf(options)), data(splitCorpus(corpus, options.valFraction)),
      master(f32Buffer("master weights", layout.totalSize())),
      working(DeviceBuffer("working weights",
                           layout.totalSize() * dtypeBytes(options.dtype))),
      grads(f32Buffer("gradients", layout.totalSize())),
      adamM(f32Buffer("AdamW first moments", layout.totalSize())),
      adamV(f32Buffer("AdamW second moments", layout.totalSize())),
      decayMask(DeviceBuffer("weight decay mask", layout.totalSize())),
      tokens(DeviceBuffer("tokens", options.batch * options.model.seq * 4)),
      targets(DeviceBuffer("targets", options.batch * options.model.seq * 4)),
      scalars(f32Buffer("step scalars", kScalarCount)),
      reduction(f32Buffer(
          "reduction workspace",
          TrainKernels::reductionWorkspaceFloats(std::max(
              layout.totalSize(), options.batch * options.model.seq)))) {
  NvtxRange range{"set up training"};
  sampler = std::make_unique<BatchSampler>(data, options.batch,
                                           options.model.seq, options.seed);
  uploadFloats(master, initialParameters(layout, options.model, options.seed));
  decayMask.upload(decayMaskOf(layout));
  // Padding is never written by the model: zero gradients and moments keep
  // it (and AdamW's update of it) zero.
  grads.fill(0, stream.get());
  adamM.fill(0, stream.get());
  adamV.fill(0, stream.get());
  trainKernels.castFromF32(options.dtype, master.get(), working.get(),
                           layout.totalSize(), stream);
  model = std::make_unique<GptModel>(
      options.model, options.batch, options.model.seq, options.dtype, *kernels,
      trainKernels, matmul, working.get(), grads.get());
  stream.synchronize();
}

Trainer::~Trainer() = default;

std::int64_t Trainer::tokensPerStep() const {
  return options.batch * options.model.seq;
}

double Trainer::flopsPerToken() const {
  const GptConfig &c = options.model;
  double parameters =
      static_cast<double>(layout.parameterCount() - layout.wpe().size);
  return 6.0 * parameters + 12.0 * c.layers * c.seq * c.dModel;
}

void Trainer::uploadBatch(const std::vector<std::int32_t> &hostTokens,
                          const std::vector<std::int32_t> &hostTargets) {
  Bytes bytes(tokens.bytes());
  std::memcpy(bytes.data(), hostTokens.data(), bytes.size());
  tokens.upload(bytes);
  std::memcpy(bytes.data(), hostTargets.data(), bytes.size());
  targets.upload(bytes);
}

/// The mean of the model's per-position losses, summed on the GPU in a fixed
/// order; waits for the stream.
double Trainer::meanLoss() {
  CUdeviceptr lossSum = scalars.get() + kLossSum * sizeof(float);
  trainKernels.sum(model->losses(), lossSum, model->rows(), reduction.get(),
                   stream);
  stream.synchronize();
  std::vector<float> values = downloadFloats(scalars);
  return values[kLossSum] / static_cast<double>(model->rows());
}

StepResult Trainer::step() {
  NvtxRange range{"training step"};
  StepResult result;
  result.step = stepIndex;
  result.lr = learningRate(options.schedule, stepIndex);
  sampler->trainBatch(stepIndex, hostTokens, hostTargets);
  uploadBatch(hostTokens, hostTargets);
  model->forward(tokens.get(), targets.get(), true, stream);
  model->backward(tokens.get(), stream);
  {
    NvtxRange optimizerRange{"AdamW"};
    CUdeviceptr normSquared = scalars.get() + kGradNormSquared * sizeof(float);
    trainKernels.sumOfSquares(grads.get(), normSquared, layout.totalSize(),
                              reduction.get(), stream);
    AdamWStep hyper = options.adam;
    hyper.lr = result.lr;
    hyper.step = stepIndex + 1;
    adamW(trainKernels, options.dtype, hyper, master.get(), grads.get(),
          adamM.get(), adamV.get(), decayMask.get(), normSquared, working.get(),
          layout.totalSize(), stream);
  }
  result.loss = meanLoss();
  result.gradNorm = std::sqrt(downloadFloats(scalars)[kGradNormSquared]);
  ++stepIndex;
  return result;
}

double Trainer::evaluate() {
  NvtxRange range{"validation"};
  double total = 0;
  std::int64_t batches =
      std::min(options.evalBatches, sampler->validationBatches());
  for (std::int64_t index = 0; index < batches; ++index) {
    sampler->validationBatch(index, hostTokens, hostTargets);
    uploadBatch(hostTokens, hostTargets);
    model->forward(tokens.get(), targets.get(), false, stream);
    total += meanLoss();
  }
  return total / static_cast<double>(batches);
}

std::string Trainer::hyperparameters() const {
  const TrainOptions &o = options;
  nlohmann::json json = {{"model", o.model.describe()},
                         {"batch", o.batch},
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
                         {"data", corpus.name},
                         {"val_fraction", o.valFraction}};
  return json.dump();
}

TrainState Trainer::state() const {
  NvtxRange range{"download the training state"};
  stream.synchronize();
  TrainState state;
  state.config = options.model;
  state.step = stepIndex;
  state.seed = options.seed;
  state.hyperparameters = hyperparameters();
  state.parameters = downloadFloats(master);
  state.adamM = downloadFloats(adamM);
  state.adamV = downloadFloats(adamV);
  return state;
}

void Trainer::restore(const TrainState &state) {
  NvtxRange range{"restore the training state"};
  if (state.hyperparameters != hyperparameters())
    throw Error("the checkpoint was written by a run with other settings:\n"
                "  checkpoint: " +
                state.hyperparameters + "\n  this run:   " + hyperparameters());
  uploadFloats(master, state.parameters);
  uploadFloats(adamM, state.adamM);
  uploadFloats(adamV, state.adamV);
  trainKernels.castFromF32(options.dtype, master.get(), working.get(),
                           layout.totalSize(), stream);
  stream.synchronize();
  stepIndex = state.step;
}

} // namespace fa::train
