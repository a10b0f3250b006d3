//===- GptModel.cpp - The GPT model's forward and backward on a GPU -------===//

#include "fa/train/GptModel.h"

#include "fa/runtime/CheckedMath.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/KernelChoice.h"
#include "fa/runtime/Nvtx.h"
#include "fa/train/LossHead.h"
#include "fa/train/StepProfile.h"

#include <array>
#include <sstream>

namespace fa::train {

namespace {

std::unique_ptr<Kernel> loadKernel(const KernelSpec &spec,
                                   const DeviceInfo &device) {
  return std::make_unique<Kernel>(spec, device);
}

/// The causal attention kernels of `variant` ("" or "dropout"): the twins
/// taking strided views when `views`, else the contiguous ones.
GptKernels::Attention loadAttention(const KernelLibrary &library,
                                    const TuningCache *cache,
                                    const DeviceInfo &device,
                                    const GptConfig &config, DType dtype,
                                    const std::string &variant, bool views) {
  const std::int64_t headDim = config.headDim();
  KernelQuery forwardQuery{
      kAttentionForwardOp, dtype, headDim, true, variant, views};
  KernelChoice forward =
      chooseKernel(library, forwardQuery, config.seq, cache, device.name);
  KernelQuery backwardQuery{
      kAttentionBackwardOp, dtype, headDim, true, variant, views};
  KernelChoice backward =
      chooseKernel(library, backwardQuery, config.seq, cache, device.name);
  AttentionBackwardKernels backwardKernels =
      attentionBackwardKernels(library, *backward.kernel);
  if (backward.kernel->softmaxScale() != forward.kernel->softmaxScale())
    throw Error("kernel " + backward.kernel->name +
                " uses another softmax scale than " + forward.kernel->name);
  return {loadKernel(*forward.kernel, device),
          loadKernel(*backwardKernels.delta, device),
          loadKernel(*backwardKernels.dkdv, device),
          loadKernel(*backwardKernels.dq, device)};
}

/// Whether the library has causal attention kernels taking views (forward
/// and backward) for every group the model runs: the plain one, and with
/// `dropout` the dropout variant's. A library without them (one built
/// before the twins, or a head dim whose strided kernels spill) leaves the
/// model on the contiguous kernels and head copies.
bool hasViewsKernels(const KernelLibrary &library, const GptConfig &config,
                     DType dtype, bool dropout) {
  std::vector<std::string> variants = {""};
  if (dropout)
    variants.push_back("dropout");
  for (const std::string &variant : variants)
    for (const char *op : {kAttentionForwardOp, kAttentionBackwardOp})
      if (library.candidates({op, dtype, config.headDim(), true, variant, true})
              .empty())
        return false;
  return true;
}

} // namespace

GptKernels GptKernels::load(const KernelLibrary &library,
                            const TuningCache *cache, const DeviceInfo &device,
                            const GptConfig &config, DType dtype, bool dropout,
                            bool views) {
  NvtxRange range{"load the model's library kernels"};
  GptKernels kernels;
  // One kind for all: the model reads heads in place only when every
  // attention kernel takes views (headViews()).
  views = views && hasViewsKernels(library, config, dtype, dropout);
  kernels.attention = loadAttention(library, cache, device, config, dtype,
                                    /*variant=*/"", views);
  if (dropout)
    kernels.attentionDropout =
        loadAttention(library, cache, device, config, dtype, "dropout", views);

  const KernelSpec &layerNormBackward = chooseLayerNormKernel(
      library, kLayerNormBackwardOp, dtype, config.dModel);
  kernels.layerNormForward = loadKernel(
      chooseLayerNormKernel(library, kLayerNormForwardOp, dtype, config.dModel),
      device);
  kernels.layerNormBackward = loadKernel(layerNormBackward, device);
  kernels.layerNormParams =
      loadKernel(layerNormParamsKernel(library, layerNormBackward), device);
  // The residual kernels (fa.layernorm's residual operand) add the residual
  // stream inside the LayerNorms. A library without them for these rows
  // (built before they existed) leaves the adds to TrainKernels.
  const KernelSpec *residualForward = nullptr, *residualBackward = nullptr;
  try {
    residualForward = &chooseLayerNormKernel(library, kLayerNormForwardOp,
                                             dtype, config.dModel, true);
    residualBackward = &chooseLayerNormKernel(library, kLayerNormBackwardOp,
                                              dtype, config.dModel, true);
  } catch (const Error &) {
    return kernels;
  }
  kernels.layerNormForwardResidual = loadKernel(*residualForward, device);
  kernels.layerNormBackwardResidual = loadKernel(*residualBackward, device);
  kernels.layerNormParamsResidual =
      loadKernel(layerNormParamsKernel(library, *residualBackward), device);
  return kernels;
}

EpilogueFusion EpilogueFusion::parse(const std::string &list) {
  EpilogueFusion fusion{false, false, false};
  if (list == "none")
    return fusion;
  if (list == "all")
    return {true, true, true};
  std::stringstream names(list);
  for (std::string name; std::getline(names, name, ',');) {
    if (name == "gelu-forward")
      fusion.geluForward = true;
    else if (name == "gelu-backward")
      fusion.geluBackward = true;
    else if (name == "bias-grad")
      fusion.biasGradients = true;
    else
      throw Error("unknown epilogue '" + name +
                  "': give none, all, or a comma-separated list of "
                  "gelu-forward, gelu-backward, bias-grad");
  }
  return fusion;
}

std::string EpilogueFusion::describe() const {
  std::string names;
  for (auto [on, name] : {std::pair{geluForward, "gelu-forward"},
                          std::pair{geluBackward, "gelu-backward"},
                          std::pair{biasGradients, "bias-grad"}})
    if (on)
      names += (names.empty() ? "" : ",") + std::string(name);
  return names.empty() ? "none" : names;
}

bool GptKernels::headViews() const {
  for (const Attention *set : {&attention, &attentionDropout})
    for (const std::unique_ptr<Kernel> *kernel :
         {&set->forward, &set->delta, &set->dkdv, &set->dq})
      if (*kernel && !(*kernel)->spec().views)
        return false;
  return true;
}

std::string GptKernels::describe() const {
  std::string dropoutKernels;
  if (attentionDropout.forward)
    dropoutKernels =
        "attention dropout:  " + attentionDropout.forward->spec().name + ", " +
        attentionDropout.dq->spec().name + "\n";
  return "attention forward:  " + attention.forward->spec().name +
         (headViews() ? " (q, k, v read in place from the fused qkv)" : "") +
         "\nattention backward: " + attention.dq->spec().name + "\n" +
         dropoutKernels +
         "layernorm forward:  " + layerNormForward->spec().name +
         "\nlayernorm backward: " + layerNormBackward->spec().name + "\n" +
         (layerNormForwardResidual
              ? "layernorm residual: " + layerNormForwardResidual->spec().name +
                    ", " + layerNormBackwardResidual->spec().name + "\n"
              : std::string());
}

/// What one layer keeps from its forward for its backward, and the library
/// kernels' launches bound to it. M = batch * seq rows.
struct GptModel::Layer {
  DeviceBuffer input;              // x entering the layer [M, C]
  DeviceBuffer ln1, mean1, rstd1;  // LayerNorm 1 [M, C], f32 [M] x 2
  DeviceBuffer qkv;                // [M, 3C]
  DeviceBuffer q, k, v, attention; // [B, H, T, D] each
  DeviceBuffer lse;                // f32 [B, H, T]
  DeviceBuffer merged;             // attention, heads merged [M, C]
  DeviceBuffer middle;             // x after the attention's residual [M, C]
  DeviceBuffer ln2, mean2, rstd2;  // LayerNorm 2
  DeviceBuffer fc, gelu;           // u and gelu(u) [M, F]
  std::unique_ptr<LayerNormForwardLaunch> ln1Forward, ln2Forward;
  std::unique_ptr<LayerNormBackwardLaunch> ln1Backward, ln2Backward;
  std::unique_ptr<AttentionLaunch> attentionForward;
  std::unique_ptr<AttentionBackwardLaunch> attentionBackward;
  // With attention dropout (models that drop): the same buffers.
  std::unique_ptr<AttentionLaunch> attentionForwardDropout;
  std::unique_ptr<AttentionBackwardLaunch> attentionBackwardDropout;
  // With residual LayerNorm kernels: ln1 of the previous layer's middle plus
  // its MLP output (writing input; none for layer 0), ln2 of input plus
  // the attention's projection (writing middle).
  std::unique_ptr<LayerNormForwardLaunch> ln1ForwardResidual,
      ln2ForwardResidual;
};

/// The buffers every layer shares: the final LayerNorm and the loss, and
/// the backward's gradients of activations (one layer's at a time).
struct GptModel::Workspace {
  DeviceBuffer final, lnf, meanf, rstdf;  // x after the last layer, its norm
  DeviceBuffer losses;                    // f32 [M]
  DeviceBuffer projected;                 // a projection's output [M, C]
  DeviceBuffer residualGrad;              // d loss / d x [M, C]
  DeviceBuffer normGrad;                  // a LayerNorm backward's dx [M, C]
  DeviceBuffer normOutGrad;               // d loss / d (LayerNorm output)
  DeviceBuffer mergedGrad;                // [M, C]
  DeviceBuffer qkvGrad;                   // [M, 3C]
  DeviceBuffer dq, dk, dv, attentionGrad; // [B, H, T, D] each
  DeviceBuffer fcGrad, geluGrad;          // [M, F] each
  DeviceBuffer tokenSeen; // [V] bytes: the embedding backward's scratch
  std::unique_ptr<LayerNormForwardLaunch> lnfForward;
  // With residual LayerNorm kernels: the last middle plus its MLP output.
  std::unique_ptr<LayerNormForwardLaunch> lnfForwardResidual;
  std::unique_ptr<LayerNormBackwardLaunch> lnfBackward;
  // The LM head and cross-entropy, chunks of rows at a time (its f32 logits
  // and dlogits are a chunk's, not the batch's).
  std::unique_ptr<LossHead> head;
};

/// The backward's weight-gradient products on a stream of their own
/// (setWeightGradientStream). The training stream forks it once a dy is
/// ready and joins it before overwriting a buffer a pending product reads:
/// the branch gradient (the residual gradient, or its dropped copy in
/// `projected`), which the LayerNorm backwards add into; fc's and qkv's
/// output gradients, which the next layer's backward rewrites.
struct GptModel::WeightGradientStream {
  enum Read { BranchGrad, FcGrad, QkvGrad, kReads };

  Matmul matmul; // Its own cuBLASLt workspace: products run concurrently.
  Stream stream;
  Event forked, finished;
  std::array<Event, kReads> readDone;
  std::array<bool, kReads> pending{};
  bool active = false; // Forked in this backward.

  /// This stream waits for the training stream's work so far.
  void fork(const Stream &main) {
    forked.record(main);
    forked.waitOn(stream);
    active = true;
  }
  /// The products enqueued so far are the last to read `read`.
  void markRead(Read read) {
    readDone[read].record(stream);
    pending[read] = true;
  }
  /// The training stream waits until nothing pending reads `read`.
  void join(Read read, const Stream &main) {
    if (!pending[read])
      return;
    readDone[read].waitOn(main);
    pending[read] = false;
  }
  /// The training stream waits for every product of this backward.
  void joinAll(const Stream &main) {
    if (!active)
      return;
    finished.record(stream);
    finished.waitOn(main);
    pending = {};
    active = false;
  }
};

namespace {

/// Allocates device buffers and counts their bytes.
class Allocator {
public:
  explicit Allocator(DType dtype) : dtype(dtype) {}
  DeviceBuffer activation(const std::string &name, std::int64_t elements) {
    return bytes(name, elements * static_cast<std::int64_t>(dtypeBytes(dtype)));
  }
  DeviceBuffer f32(const std::string &name, std::int64_t elements) {
    return bytes(name, elements * 4);
  }
  DeviceBuffer bytes(const std::string &name, std::int64_t count) {
    total += static_cast<std::size_t>(count);
    return DeviceBuffer("gpt " + name, static_cast<std::size_t>(count));
  }
  std::size_t total = 0;

private:
  DType dtype;
};

} // namespace

GptModel::GptModel(const GptConfig &config, std::int64_t batch,
                   std::int64_t seq, DType dtype, const GptKernels &kernels,
                   const TrainKernels &trainKernels, Matmul &matmul,
                   CUdeviceptr weights, CUdeviceptr grads,
                   const DropoutDraw &dropout)
    : config(config), layout(config), batch(batch), seq(seq), dtype(dtype),
      kernels(kernels), trainKernels(trainKernels), matmul(matmul),
      weights(weights), grads(grads), dropout(dropout),
      headViews(kernels.headViews()),
      residualNorms(kernels.layerNormForwardResidual != nullptr) {
  if (batch <= 0 || seq <= 0 || seq > config.seq)
    throw Error("GPT model: batch " + std::to_string(batch) + " and seq " +
                std::to_string(seq) + " must be positive, seq at most " +
                std::to_string(config.seq));
  if (dtype == DType::F16)
    throw Error("GPT model: activations must be bf16 or f32, not f16");
  if (!(dropout.p >= 0.0f && dropout.p < 1.0f))
    throw Error("GPT model: dropout must be in [0, 1), got " +
                std::to_string(dropout.p));
  if (dropout.p > 0 && !kernels.attentionDropout.forward)
    throw Error("GPT model: dropout " + std::to_string(dropout.p) +
                " needs the attention dropout kernels (GptKernels::load with "
                "dropout)");
  NvtxRange range{"allocate the model's activations"};
  // Without head views, q, k, v, the attention's output and their gradients
  // are copied to and from [B, H, T, D] buffers of their own.
  const std::int64_t headCopies = headViews ? 0 : 1;
  const std::int64_t m = rows(), c = config.dModel, f = config.mlpHidden(),
                     v = config.vocab, h = config.heads;
  const AttentionShape attention{batch, h, h, seq, seq, config.headDim()};
  const LayerNormShape norm{m, c};
  Allocator allocate(dtype);

  work = std::make_unique<Workspace>(
      Workspace{allocate.activation("final x", m * c),
                allocate.activation("lnf", m * c),
                allocate.f32("lnf mean", m),
                allocate.f32("lnf rstd", m),
                allocate.f32("losses", m),
                allocate.activation("projected", m * c),
                allocate.activation("residual grad", m * c),
                allocate.activation("norm grad", m * c),
                allocate.activation("norm output grad", m * c),
                allocate.activation("merged grad", m * c),
                allocate.activation("qkv grad", m * 3 * c),
                allocate.activation("dq", headCopies * m * c),
                allocate.activation("dk", headCopies * m * c),
                allocate.activation("dv", headCopies * m * c),
                allocate.activation("attention grad", headCopies * m * c),
                allocate.activation("fc grad", m * f),
                allocate.activation("gelu grad", m * f),
                allocate.bytes("tokens seen", v),
                nullptr,
                nullptr,
                nullptr,
                nullptr});
  Workspace &w = *work;
  const std::int64_t headChunk = LossHead::chooseChunkRows(m, v, c, dtype);
  w.head = std::make_unique<LossHead>(m, v, c, dtype, headChunk, matmul,
                                      trainKernels);
  allocate.total += LossHead::workspaceBytes(v, dtype, headChunk);
  w.lnfForward = std::make_unique<LayerNormForwardLaunch>(
      *kernels.layerNormForward, norm,
      LayerNormForwardBuffers{w.final.get(), weight(layout.lnfW()),
                              weight(layout.lnfB()), w.lnf.get(), w.meanf.get(),
                              w.rstdf.get()},
      kLayerNormEps);
  w.lnfBackward = std::make_unique<LayerNormBackwardLaunch>(
      *kernels.layerNormBackward, *kernels.layerNormParams, norm,
      LayerNormBackwardBuffers{
          w.final.get(), weight(layout.lnfW()), w.meanf.get(), w.rstdf.get(),
          w.normOutGrad.get(), w.residualGrad.get(), gradient(layout.lnfW()),
          gradient(layout.lnfB())});

  for (std::int64_t l = 0; l < config.layers; ++l) {
    const std::string n = "layer" + std::to_string(l) + " ";
    auto layer = std::make_unique<Layer>(
        Layer{allocate.activation(n + "input", m * c),
              allocate.activation(n + "ln1", m * c),
              allocate.f32(n + "mean1", m),
              allocate.f32(n + "rstd1", m),
              allocate.activation(n + "qkv", m * 3 * c),
              allocate.activation(n + "q", headCopies * m * c),
              allocate.activation(n + "k", headCopies * m * c),
              allocate.activation(n + "v", headCopies * m * c),
              allocate.activation(n + "attention", headCopies * m * c),
              allocate.f32(n + "lse", m * h),
              allocate.activation(n + "merged", m * c),
              allocate.activation(n + "middle", m * c),
              allocate.activation(n + "ln2", m * c),
              allocate.f32(n + "mean2", m),
              allocate.f32(n + "rstd2", m),
              allocate.activation(n + "fc", m * f),
              allocate.activation(n + "gelu", m * f),
              nullptr,
              nullptr,
              nullptr,
              nullptr,
              nullptr,
              nullptr,
              nullptr,
              nullptr,
              nullptr,
              nullptr});
    Layer &x = *layer;
    const LayerParameters &p = layout.layer(l);
    x.ln1Forward = std::make_unique<LayerNormForwardLaunch>(
        *kernels.layerNormForward, norm,
        LayerNormForwardBuffers{x.input.get(), weight(p.ln1W), weight(p.ln1B),
                                x.ln1.get(), x.mean1.get(), x.rstd1.get()},
        kLayerNormEps);
    x.ln2Forward = std::make_unique<LayerNormForwardLaunch>(
        *kernels.layerNormForward, norm,
        LayerNormForwardBuffers{x.middle.get(), weight(p.ln2W), weight(p.ln2B),
                                x.ln2.get(), x.mean2.get(), x.rstd2.get()},
        kLayerNormEps);
    x.ln1Backward = normBackwardLaunch(x.input.get(), p.ln1W, p.ln1B,
                                       x.mean1.get(), x.rstd1.get());
    x.ln2Backward = normBackwardLaunch(x.middle.get(), p.ln2W, p.ln2B,
                                       x.mean2.get(), x.rstd2.get());
    if (residualNorms) {
      x.ln2ForwardResidual = std::make_unique<LayerNormForwardLaunch>(
          *kernels.layerNormForwardResidual, norm,
          LayerNormForwardBuffers{x.input.get(), weight(p.ln2W), weight(p.ln2B),
                                  x.ln2.get(), x.mean2.get(), x.rstd2.get(),
                                  w.projected.get(), x.middle.get()},
          kLayerNormEps);
      if (l > 0)
        x.ln1ForwardResidual = std::make_unique<LayerNormForwardLaunch>(
            *kernels.layerNormForwardResidual, norm,
            LayerNormForwardBuffers{layers[l - 1]->middle.get(), weight(p.ln1W),
                                    weight(p.ln1B), x.ln1.get(), x.mean1.get(),
                                    x.rstd1.get(), w.projected.get(),
                                    x.input.get()},
            kLayerNormEps);
    }
    AttentionBuffers forwardBuffers{x.q.get(), x.k.get(), x.v.get(),
                                    x.attention.get(), x.lse.get()};
    AttentionBackwardBuffers backwardBuffers{
        x.q.get(),         x.k.get(),   x.v.get(),
        x.attention.get(), x.lse.get(), w.attentionGrad.get(),
        w.dq.get(),        w.dk.get(),  w.dv.get()};
    if (headViews)
      bindHeadViews(x, forwardBuffers, backwardBuffers);
    auto launches = [&](const GptKernels::Attention &kernel,
                        const ArgBindings &variant,
                        std::unique_ptr<AttentionLaunch> &forward,
                        std::unique_ptr<AttentionBackwardLaunch> &backward) {
      forward = std::make_unique<AttentionLaunch>(*kernel.forward, attention,
                                                  forwardBuffers, variant);
      backward = std::make_unique<AttentionBackwardLaunch>(
          *kernel.delta, *kernel.dkdv, *kernel.dq, attention, backwardBuffers,
          variant);
    };
    launches(kernels.attention, {}, x.attentionForward, x.attentionBackward);
    if (dropout.p > 0) {
      // The offset is set per step and layer (Dropout.h) before each launch.
      const ArgBindings variant{
          {"dropout_p", dropout.p},
          {"dropout_seed", static_cast<std::int64_t>(dropout.seed)},
          {"dropout_offset", std::int32_t{0}}};
      launches(kernels.attentionDropout, variant, x.attentionForwardDropout,
               x.attentionBackwardDropout);
    }
    layers.push_back(std::move(layer));
  }
  if (residualNorms)
    w.lnfForwardResidual = std::make_unique<LayerNormForwardLaunch>(
        *kernels.layerNormForwardResidual, norm,
        LayerNormForwardBuffers{layers.back()->middle.get(),
                                weight(layout.lnfW()), weight(layout.lnfB()),
                                w.lnf.get(), w.meanf.get(), w.rstdf.get(),
                                w.projected.get(), w.final.get()},
        kLayerNormEps);
  bytesHeld = allocate.total;
  // Runs check their memory with plannedActivationBytes() before they get
  // here: it must count what was allocated.
  std::size_t planned =
      plannedActivationBytes(config, batch, seq, dtype, !headViews);
  if (bytesHeld != planned)
    throw Error("GPT model: allocated " + std::to_string(bytesHeld) +
                " bytes of activations, but plannedActivationBytes() counts " +
                std::to_string(planned) + " (update it with the constructor)");
}

/// The backward of a layer's LayerNorm of x: d loss / d (its output) in
/// normOutGrad; with residual kernels it adds dx to residualGrad in place
/// (the residual stream's gradient), else it writes dx to normGrad for the
/// layer to add.
std::unique_ptr<LayerNormBackwardLaunch>
GptModel::normBackwardLaunch(CUdeviceptr x, std::int64_t weightOffset,
                             std::int64_t biasOffset, CUdeviceptr mean,
                             CUdeviceptr rstd) const {
  const LayerNormShape norm{rows(), config.dModel};
  const Workspace &w = *work;
  LayerNormBackwardBuffers buffers{x,
                                   weight(weightOffset),
                                   mean,
                                   rstd,
                                   w.normOutGrad.get(),
                                   w.normGrad.get(),
                                   gradient(weightOffset),
                                   gradient(biasOffset)};
  if (!residualNorms)
    return std::make_unique<LayerNormBackwardLaunch>(
        *kernels.layerNormBackward, *kernels.layerNormParams, norm, buffers);
  buffers.dx = buffers.dresidual = w.residualGrad.get();
  return std::make_unique<LayerNormBackwardLaunch>(
      *kernels.layerNormBackwardResidual, *kernels.layerNormParamsResidual,
      norm, buffers);
}

GptModel::~GptModel() = default;

void GptModel::setWeightGradientStream(bool enabled) {
  if (!enabled)
    weightGradStream.reset();
  else if (!weightGradStream)
    weightGradStream = std::make_unique<WeightGradientStream>();
}

GptModel::WeightGradientStream *GptModel::weightGradientSide() const {
  if (profiler && profiler->recording())
    return nullptr;
  return weightGradStream.get();
}

std::size_t GptModel::activationBytes() const { return bytesHeld; }

std::size_t GptModel::plannedActivationBytes(const GptConfig &config,
                                             std::int64_t batch,
                                             std::int64_t seq, DType dtype,
                                             bool headCopies) {
  const char *what = "counting the GPT model's activations";
  auto product = [&](std::int64_t a, std::int64_t b) {
    return checkedMultiply(a, b, what);
  };
  const std::int64_t m = product(batch, seq), c = config.dModel,
                     f = config.mlpHidden(), v = config.vocab, h = config.heads;
  const std::int64_t mc = product(m, c), mf = product(m, f);
  // As the constructor allocates them: the workspace's final x, lnf,
  // projected, 5 gradients of width c, qkv grad (3c), with head copies dq,
  // dk, dv, attention grad; fc and gelu grads. Its f32 lnf mean, rstd and
  // losses; the LM head's chunk of logits and dlogits; V bytes of tokens
  // seen (the embedding backward's scratch). Each layer's input,
  // ln1, qkv (3c), with head copies q, k, v, attention; merged, middle, ln2;
  // fc and gelu; f32 mean1, rstd1, mean2, rstd2 and lse (h).
  const std::int64_t copies = headCopies ? 4 : 0;
  std::int64_t activations =
      checkedAdd(product(10 + copies, mc), product(2, mf), what);
  std::int64_t floats = product(3, m);
  std::int64_t layerActivations =
      checkedAdd(product(8 + copies, mc), product(2, mf), what);
  std::int64_t layerFloats = checkedAdd(product(4, m), product(m, h), what);
  activations =
      checkedAdd(activations, product(config.layers, layerActivations), what);
  floats = checkedAdd(floats, product(config.layers, layerFloats), what);
  const std::size_t lossHead = LossHead::workspaceBytes(
      v, dtype, LossHead::chooseChunkRows(m, v, c, dtype));
  return static_cast<std::size_t>(checkedAdd(
             product(activations, static_cast<std::int64_t>(dtypeBytes(dtype))),
             product(floats, 4), what)) +
         lossHead + static_cast<std::size_t>(v);
}

CUdeviceptr GptModel::losses() const { return work->losses.get(); }

std::vector<float> GptModel::downloadLosses() const {
  return decode(work->losses.download(), DType::F32);
}

CUdeviceptr GptModel::weight(std::int64_t offset) const {
  return weights + static_cast<CUdeviceptr>(offset) * dtypeBytes(dtype);
}

CUdeviceptr GptModel::gradient(std::int64_t offset) const {
  return grads + static_cast<CUdeviceptr>(offset) * sizeof(float);
}

/// q, k, v as views of the layer's fused qkv [B, T, 3C] (head h of q at
/// column h * D, of k at C + h * D, of v at 2C + h * D), the attention's
/// output written straight into merged [B, T, C], and the backward's dout,
/// dq, dk, dv the same views of mergedGrad and qkvGrad: no [B, H, T, D]
/// copies.
void GptModel::bindHeadViews(const Layer &x, AttentionBuffers &forward,
                             AttentionBackwardBuffers &backward) const {
  const std::int64_t c = config.dModel, d = config.headDim();
  const CUdeviceptr element = dtypeBytes(dtype);
  const Strides packed{seq * 3 * c, d, 3 * c, 1}, merged{seq * c, d, c, 1};
  const CUdeviceptr qkv = x.qkv.get(), qkvGrad = work->qkvGrad.get();
  forward = AttentionBuffers{qkv,
                             qkv + c * element,
                             qkv + 2 * c * element,
                             x.merged.get(),
                             x.lse.get(),
                             {packed, packed, packed, merged}};
  backward = AttentionBackwardBuffers{qkv,
                                      qkv + c * element,
                                      qkv + 2 * c * element,
                                      x.merged.get(),
                                      x.lse.get(),
                                      work->mergedGrad.get(),
                                      qkvGrad,
                                      qkvGrad + c * element,
                                      qkvGrad + 2 * c * element};
  backward.strides = {packed, packed, packed, merged,
                      merged, packed, packed, packed};
}

CUdeviceptr GptModel::addDropped(CUdeviceptr a, CUdeviceptr b, CUdeviceptr out,
                                 std::int64_t n, std::uint32_t site,
                                 const Stream &stream) {
  if (activeDropout) {
    trainKernels.dropoutAdd(dtype, a, b, out, n, *activeDropout, site, stream);
    return out;
  }
  if (!a)
    return b;
  trainKernels.add(dtype, a, b, out, n, stream);
  return out;
}

void GptModel::forward(CUdeviceptr tokens, CUdeviceptr targets,
                       bool forBackward, const Stream &stream,
                       std::optional<std::uint32_t> dropoutStep) {
  NvtxRange range{"forward"};
  const std::int64_t m = rows(), c = config.dModel;
  activeDropout.reset();
  if (dropoutStep && dropout.p > 0)
    activeDropout = DropoutDraw{dropout.p, dropout.seed, *dropoutStep};
  {
    PhaseScope scope(profiler, Phase::Embedding, stream);
    trainKernels.embeddingForward(
        dtype, tokens, weight(layout.wte().offset), weight(layout.wpe().offset),
        layers[0]->input.get(), batch, seq, c, stream);
  }
  if (activeDropout) {
    PhaseScope scope(profiler, Phase::ElementwiseOther, stream);
    addDropped(0, layers[0]->input.get(), layers[0]->input.get(), m * c,
               embeddingDropoutSite(), stream);
  }
  for (std::int64_t l = 0; l < config.layers; ++l) {
    NvtxRange layerRange{"layer " + std::to_string(l) + " forward"};
    CUdeviceptr output =
        l + 1 < config.layers ? layers[l + 1]->input.get() : work->final.get();
    forwardLayer(l, stream);
    if (residualInNorms())
      continue; // The next LayerNorm (ln1, or lnf) adds the MLP's output.
    PhaseScope scope(profiler, Phase::Residual, stream);
    addDropped(layers[l]->middle.get(), work->projected.get(), output, m * c,
               mlpBranchDropoutSite(l), stream);
  }
  NvtxRange headRange{"final norm, head and loss"};
  {
    PhaseScope scope(profiler, Phase::LayerNorm, stream);
    (residualInNorms() ? work->lnfForwardResidual : work->lnfForward)
        ->enqueue(stream);
  }
  // With forBackward the head's backward runs here, chunk by chunk: d loss
  // / d lnf into normOutGrad (the backward starts from it), the head's
  // weight gradient overwritten (tied: wte's, which the embedding's backward
  // then adds to).
  work->head->forward(
      work->lnf.get(), weight(layout.head()), targets, work->losses.get(),
      forBackward, forBackward ? work->normOutGrad.get() : 0,
      forBackward ? gradient(layout.head()) : 0, stream, profiler);
}

/// Everything of the layer but its last residual add: the MLP's output is
/// left in work->projected, for forward() to add (dropped) into the next
/// layer's input.
void GptModel::forwardLayer(std::int64_t index, const Stream &stream) {
  Layer &x = *layers[index];
  const LayerParameters &p = layout.layer(index);
  const std::int64_t m = rows(), c = config.dModel, f = config.mlpHidden();
  const std::int64_t h = config.heads, d = config.headDim();
  auto timed = [&](Phase phase, auto &&launch) {
    PhaseScope scope(profiler, phase, stream);
    launch();
  };
  timed(Phase::LayerNorm, [&] {
    (residualInNorms() && index > 0 ? x.ln1ForwardResidual : x.ln1Forward)
        ->enqueue(stream);
  });
  timed(Phase::Matmul, [&] {
    matmul.forward(dtype, dtype, {m, c, 3 * c}, x.ln1.get(), weight(p.qkvW),
                   weight(p.qkvB), x.qkv.get(), stream);
  });
  if (!headViews)
    timed(Phase::HeadsLayout, [&] {
      trainKernels.splitHeads(dtype, x.qkv.get(), x.q.get(), x.k.get(),
                              x.v.get(), batch, seq, h, d, stream);
    });
  timed(Phase::AttentionForward, [&] {
    if (!activeDropout)
      return x.attentionForward->enqueue(stream);
    x.attentionForwardDropout->setDropoutOffset(
        attentionDropoutOffset(activeDropout->step, config.layers, index));
    x.attentionForwardDropout->enqueue(stream);
  });
  if (!headViews)
    timed(Phase::HeadsLayout, [&] {
      trainKernels.mergeHeads(dtype, x.attention.get(), x.merged.get(), batch,
                              seq, h, d, stream);
    });
  timed(Phase::Matmul, [&] {
    matmul.forward(dtype, dtype, {m, c, c}, x.merged.get(), weight(p.projW),
                   weight(p.projB), work->projected.get(), stream);
  });
  if (residualInNorms()) {
    timed(Phase::LayerNorm, [&] { x.ln2ForwardResidual->enqueue(stream); });
  } else {
    timed(Phase::Residual, [&] {
      addDropped(x.input.get(), work->projected.get(), x.middle.get(), m * c,
                 attentionBranchDropoutSite(index), stream);
    });
    timed(Phase::LayerNorm, [&] { x.ln2Forward->enqueue(stream); });
  }
  if (epilogues.geluForward) {
    timed(Phase::Matmul, [&] {
      matmul.forwardGelu(dtype, {m, c, f}, x.ln2.get(), weight(p.fcW),
                         weight(p.fcB), x.fc.get(), x.gelu.get(), stream);
    });
  } else {
    timed(Phase::Matmul, [&] {
      matmul.forward(dtype, dtype, {m, c, f}, x.ln2.get(), weight(p.fcW),
                     weight(p.fcB), x.fc.get(), stream);
    });
    timed(Phase::Gelu, [&] {
      trainKernels.geluForward(dtype, x.fc.get(), x.gelu.get(), m * f, stream);
    });
  }
  timed(Phase::Matmul, [&] {
    matmul.forward(dtype, dtype, {m, f, c}, x.gelu.get(), weight(p.fcProjW),
                   weight(p.fcProjB), work->projected.get(), stream);
  });
}

void GptModel::backward(CUdeviceptr tokens, const Stream &stream,
                        GradientListener *listener) {
  WeightGradientStream *side = weightGradientSide();
  // A suffix of the gradients is final once both streams' work so far is
  // done: the weight-gradient stream, forked after the training stream's.
  auto ready = [&](std::int64_t offset) {
    if (!listener)
      return;
    if (!side)
      return listener->ready(offset, stream);
    side->fork(stream);
    listener->ready(offset, side->stream);
  };
  NvtxRange range{"backward"};
  const std::int64_t m = rows(), c = config.dModel, v = config.vocab;
  {
    // The head's backward ran in the forward (LossHead): normOutGrad holds
    // d loss / d lnf.
    NvtxRange headRange{"final norm backward"};
    PhaseScope scope(profiler, Phase::LayerNorm, stream);
    work->lnfBackward->enqueue(stream);
  }
  // The final LayerNorm's gradients and an untied head's are final; a tied
  // head's (wte's) wait for the embedding's backward.
  ready(layout.lnfW());
  for (std::int64_t l = config.layers - 1; l >= 0; --l) {
    NvtxRange layerRange{"layer " + std::to_string(l) + " backward"};
    backwardLayer(l, stream);
    ready(layout.layer(l).ln1W);
  }
  {
    NvtxRange embeddingRange{"embedding backward"};
    if (activeDropout) {
      PhaseScope scope(profiler, Phase::ElementwiseOther, stream);
      addDropped(0, work->residualGrad.get(), work->residualGrad.get(), m * c,
                 embeddingDropoutSite(), stream);
    }
    PhaseScope scope(profiler, Phase::Embedding, stream);
    trainKernels.embeddingBackward(
        dtype, tokens, work->residualGrad.get(), gradient(layout.wte().offset),
        gradient(layout.wpe().offset), batch, seq, c, v, config.tiedHead,
        work->tokenSeen.get(), stream);
  }
  if (side)
    side->joinAll(stream);
  ready(0);
}

/// dx = dy W, then weightBackward.
void GptModel::linearBackward(const LinearShape &shape, CUdeviceptr dy,
                              CUdeviceptr x, std::int64_t weightOffset,
                              std::int64_t biasOffset, CUdeviceptr dx,
                              const Stream &stream) {
  {
    PhaseScope scope(profiler, Phase::Matmul, stream);
    matmul.backwardInput(dtype, shape, dy, weight(weightOffset), dx, false,
                         stream);
  }
  weightBackward(shape, dy, x, weightOffset, biasOffset, stream);
}

/// dW = dy^T x and db = the column sums of dy (both overwritten), db in
/// dW's product with epilogues.biasGradients; on the weight-gradient stream
/// when there is one (forked from `stream`: dy and x are ready).
void GptModel::weightBackward(const LinearShape &shape, CUdeviceptr dy,
                              CUdeviceptr x, std::int64_t weightOffset,
                              std::int64_t biasOffset, const Stream &stream) {
  WeightGradientStream *side = weightGradientSide();
  if (side)
    side->fork(stream);
  const Stream &on = side ? side->stream : stream;
  Matmul &products = side ? side->matmul : matmul;
  {
    PhaseScope scope(profiler, Phase::Matmul, on);
    if (epilogues.biasGradients)
      return products.backwardWeightBias(dtype, shape, dy, x,
                                         gradient(weightOffset),
                                         gradient(biasOffset), on);
    products.backwardWeight(dtype, shape, dy, x, gradient(weightOffset), false,
                            on);
  }
  PhaseScope scope(profiler, Phase::BiasGrad, on);
  trainKernels.biasGradient(dtype, dy, gradient(biasOffset), shape.rows,
                            shape.out, false, on);
}

/// work->residualGrad holds d loss / d (the layer's output) on entry and
/// d loss / d (its input) on return. A dropped branch's output gradient is
/// the residual gradient through the forward's mask (in work->projected,
/// free in the backward).
void GptModel::backwardLayer(std::int64_t index, const Stream &stream) {
  Layer &x = *layers[index];
  const LayerParameters &p = layout.layer(index);
  const std::int64_t m = rows(), c = config.dModel, f = config.mlpHidden();
  const std::int64_t h = config.heads, d = config.headDim();
  Workspace &w = *work;
  auto timed = [&](Phase phase, auto &&launch) {
    PhaseScope scope(profiler, phase, stream);
    launch();
  };
  // Where the weight-gradient products run beside this stream: the points
  // after which they are the last to read a buffer, and the points before
  // which this stream overwrites it (WeightGradientStream).
  using Read = WeightGradientStream::Read;
  WeightGradientStream *side = weightGradientSide();
  auto lastRead = [&](Read read) {
    if (side)
      side->markRead(read);
  };
  auto overwrites = [&](Read read) {
    if (side)
      side->join(read, stream);
  };
  // The previous layer's fc dW reads fcGrad, which this MLP's backward
  // rewrites first thing.
  overwrites(Read::FcGrad);
  // A LayerNorm's backward, then its dx into the residual gradient, unless
  // the residual kernel added it there (normBackwardLaunch); either adds
  // into the residual gradient, which the last branch's dW reads.
  auto normBackward = [&](LayerNormBackwardLaunch &launch) {
    overwrites(Read::BranchGrad);
    timed(Phase::LayerNorm, [&] { launch.enqueue(stream); });
    if (!residualNorms)
      timed(Phase::Residual, [&] {
        trainKernels.add(dtype, w.residualGrad.get(), w.normGrad.get(),
                         w.residualGrad.get(), m * c, stream);
      });
  };
  auto branchGrad = [&](std::uint32_t site) {
    PhaseScope scope(profiler, Phase::ElementwiseOther, stream);
    return addDropped(0, w.residualGrad.get(), w.projected.get(), m * c, site,
                      stream);
  };
  // The MLP: output = middle + drop(gelu(ln2(middle) fc_w^T + fc_b)
  // fc_proj_w^T + b).
  const CUdeviceptr mlpGrad = branchGrad(mlpBranchDropoutSite(index));
  if (epilogues.geluBackward) {
    // fc_proj's input gradient through GELU in one product; fc's bias
    // gradient then comes with its dW (or a kernel of its own), as below.
    timed(Phase::Matmul, [&] {
      matmul.backwardInputGelu(dtype, {m, f, c}, mlpGrad, weight(p.fcProjW),
                               x.fc.get(), w.fcGrad.get(), stream);
    });
    weightBackward({m, f, c}, mlpGrad, x.gelu.get(), p.fcProjW, p.fcProjB,
                   stream);
  } else {
    linearBackward({m, f, c}, mlpGrad, x.gelu.get(), p.fcProjW, p.fcProjB,
                   w.geluGrad.get(), stream);
    timed(Phase::Gelu, [&] {
      trainKernels.geluBackward(dtype, x.fc.get(), w.geluGrad.get(),
                                w.fcGrad.get(), m * f, stream);
    });
  }
  lastRead(Read::BranchGrad);
  linearBackward({m, c, f}, w.fcGrad.get(), x.ln2.get(), p.fcW, p.fcB,
                 w.normOutGrad.get(), stream);
  lastRead(Read::FcGrad);
  normBackward(*x.ln2Backward);
  // Attention: middle = input + drop(attention(ln1(input)) proj_w^T + proj_b).
  // The branch gradient's dropped copy goes to `projected`, which the MLP's
  // dW read: joined by normBackward above.
  linearBackward({m, c, c}, branchGrad(attentionBranchDropoutSite(index)),
                 x.merged.get(), p.projW, p.projB, w.mergedGrad.get(), stream);
  lastRead(Read::BranchGrad);
  // The attention's backward writes the q, k, v gradients (in place in
  // qkvGrad with head views), which the previous layer's qkv dW reads.
  overwrites(Read::QkvGrad);
  if (!headViews)
    timed(Phase::HeadsLayout, [&] {
      trainKernels.unmergeHeads(dtype, w.mergedGrad.get(),
                                w.attentionGrad.get(), batch, seq, h, d,
                                stream);
    });
  timed(Phase::AttentionBackward, [&] {
    if (!activeDropout)
      return x.attentionBackward->enqueue(stream);
    x.attentionBackwardDropout->setDropoutOffset(
        attentionDropoutOffset(activeDropout->step, config.layers, index));
    x.attentionBackwardDropout->enqueue(stream);
  });
  if (!headViews)
    timed(Phase::HeadsLayout, [&] {
      trainKernels.joinHeads(dtype, w.dq.get(), w.dk.get(), w.dv.get(),
                             w.qkvGrad.get(), batch, seq, h, d, stream);
    });
  linearBackward({m, c, 3 * c}, w.qkvGrad.get(), x.ln1.get(), p.qkvW, p.qkvB,
                 w.normOutGrad.get(), stream);
  lastRead(Read::QkvGrad);
  normBackward(*x.ln1Backward);
}

} // namespace fa::train
