//===- GptModel.h - The GPT model's forward and backward on a GPU -*- C++
//-*-===//
//
// The model GptConfig.h describes, for one batch shape, on the kernels of the
// project: attention and LayerNorm (forward and backward) from the compiler's
// kernel library, linear layers from cuBLASLt (Matmul.h), the rest from
// TrainKernels.h. Activations are `dtype` (bf16, or f32 for exact checks),
// accumulation f32, parameter gradients f32 in the flat layout.
//
// Where the library allows, work is fused rather than launched apart:
// attention reads q, k, v in place from the fused QKV product (the views
// twins; GptKernels::headViews), the LayerNorms add the residual stream
// (residual kernels), cuBLASLt's epilogues run GELU and bias gradients
// (EpilogueFusion), and the LM head with its loss runs a chunk of rows at a
// time (LossHead.h). Each fusion has its unfused path, kept for libraries
// without the kernels and for measuring one against the other.
//
// The model owns its activations (what the backward needs, kept per layer)
// and the launches bound to them; the caller owns the parameters: `weights`,
// the flat working copy in `dtype`, and `grads`, the flat f32 gradients, both
// ParameterLayout::totalSize() elements, bound at construction (the library
// kernels' arguments are packed once).
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRAIN_GPTMODEL_H
#define FA_TRAIN_GPTMODEL_H

#include "fa/runtime/Attention.h"
#include "fa/runtime/Context.h"
#include "fa/runtime/DeviceBuffer.h"
#include "fa/runtime/Kernel.h"
#include "fa/runtime/KernelLibrary.h"
#include "fa/runtime/LayerNorm.h"
#include "fa/runtime/Stream.h"
#include "fa/runtime/TuningCache.h"
#include "fa/train/Dropout.h"
#include "fa/train/GptConfig.h"
#include "fa/train/GradientSync.h"
#include "fa/train/Matmul.h"
#include "fa/train/StepProfile.h"
#include "fa/train/TrainKernels.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fa::train {

/// Which of cuBLASLt's epilogues (Matmul.h) the model runs instead of
/// TrainKernels launches of its own. The default is what was fastest on an
/// H100 (85M model, ms a step, the products' time against the launches'
/// they replace; bench/results/2026-11-27-h100-train-fusions): GELU in the
/// forward's product +0.57 / -0.85; gelu' in fc_proj's dx product (DGELU,
/// fc's bias gradient in fc's dW product) +0.6 / -1.19, the step 25.7 ->
/// 24.8 ms (bench/results/2026-12-07-train-dgelu; with the bias gradient in
/// that product too, DGELU_BGRAD, it had cost +4.34). The bias gradients in
/// the dW products (BGRADB, +1.59 / -1.90 on the training stream) are off:
/// beside the weight-gradient stream (TrainOptions::weightGradStream) the
/// dW products without them and TrainKernels::biasGradient on that stream
/// made the step 3.0% (85M) and 1.9% (10.8M) faster
/// (bench/results/2026-12-07-train-ce-bias-stream).
struct EpilogueFusion {
  bool geluForward = true;    // fc's product writes u and gelu(u).
  bool geluBackward = true;   // fc_proj's dx product applies gelu'(u).
  bool biasGradients = false; // Every bias gradient in its dW product.

  /// "none", "all", or names joined by ',': gelu-forward, gelu-backward,
  /// bias-grad. Throws, naming the unknown one.
  static EpilogueFusion parse(const std::string &list);
  /// The names as parse() takes them.
  std::string describe() const;
};

/// The library kernels one model runs, loaded onto the GPU once.
struct GptKernels {
  /// The causal attention kernels: forward, and the backward's three.
  struct Attention {
    std::unique_ptr<Kernel> forward, delta, dkdv, dq;
  };
  Attention attention;
  /// The same with attention dropout (the "dropout" variant); loaded only
  /// for a model that drops (null kernels otherwise).
  Attention attentionDropout;
  std::unique_ptr<Kernel> layerNormForward, layerNormBackward, layerNormParams;
  /// The residual LayerNorm kernels (the residual add inside), when the
  /// library has them for these rows (null otherwise).
  std::unique_ptr<Kernel> layerNormForwardResidual, layerNormBackwardResidual,
      layerNormParamsResidual;

  /// Chooses (through the tuning cache when there is one) and loads the
  /// causal attention kernels for head_dim D, with `dropout` their dropout
  /// variant too, and the LayerNorm kernels for rows of d_model, all of
  /// `dtype`; throws, saying what is missing, when the library lacks one.
  /// With `views` the attention kernels are the library's twins taking
  /// strided views (KernelQuery::views) when it has them for every group
  /// the model runs, else (and without `views`: a model making head copies,
  /// for which the contiguous kernels are faster) the contiguous ones.
  static GptKernels load(const KernelLibrary &library, const TuningCache *cache,
                         const DeviceInfo &device, const GptConfig &config,
                         DType dtype, bool dropout = false, bool views = true);
  /// Whether every attention kernel loaded takes strided views (the views
  /// twins, KernelSpec::views), so that the model reads q, k, v in place
  /// from the fused qkv; false on the contiguous kernels.
  bool headViews() const;
  /// One line per kernel: "attention forward: <name>".
  std::string describe() const;
};

class GptModel {
public:
  /// Activations for `batch` sequences of `seq` <= config.seq tokens.
  /// `dropout`: p and seed of the training forwards' masks (Dropout.h; its
  /// step is ignored, each forward names its own); p > 0 needs `kernels`
  /// loaded with dropout. The attention reads q, k, v in place when the
  /// kernels take views (GptKernels::headViews); kernels loaded without
  /// views copy them and the gradients to [B, H, T, D] buffers.
  GptModel(const GptConfig &config, std::int64_t batch, std::int64_t seq,
           DType dtype, const GptKernels &kernels,
           const TrainKernels &trainKernels, Matmul &matmul,
           CUdeviceptr weights, CUdeviceptr grads,
           const DropoutDraw &dropout = {});
  ~GptModel();
  GptModel(const GptModel &) = delete;
  GptModel &operator=(const GptModel &) = delete;

  /// losses()[i] = the cross-entropy of position i; tokens and targets are
  /// device int32 [batch, seq]. With `forBackward`, also dlogits, which the
  /// backward starts from. `dropoutStep`: a training forward of that step
  /// drops (when the model's p > 0) with that step's masks, which the
  /// backward regenerates; none: nothing is dropped (evaluation).
  void forward(CUdeviceptr tokens, CUdeviceptr targets, bool forBackward,
               const Stream &stream,
               std::optional<std::uint32_t> dropoutStep = std::nullopt);
  /// grads = d(mean loss)/d(parameters) of the last forward (which must have
  /// been run with forBackward), overwriting every gradient.
  /// `listener`, when given, hears as each suffix of the flat gradients
  /// becomes final (GradientSync.h): for data-parallel overlap.
  void backward(CUdeviceptr tokens, const Stream &stream,
                GradientListener *listener = nullptr);

  /// f32 [batch * seq] per-position losses of the last forward.
  CUdeviceptr losses() const;
  /// The same, copied to the host (waits for the copy).
  std::vector<float> downloadLosses() const;
  /// The bytes of activations and workspaces the model holds.
  std::size_t activationBytes() const;
  /// What activationBytes() will be for these sizes, before allocating
  /// (overflow-checked): the constructor's allocations, counted.
  /// `headCopies`: with [B, H, T, D] copies of q, k, v, the output and their
  /// gradients (kernels without head views; the most a model allocates).
  static std::size_t plannedActivationBytes(const GptConfig &config,
                                            std::int64_t batch,
                                            std::int64_t seq, DType dtype,
                                            bool headCopies = true);
  std::int64_t rows() const { return batch * seq; }
  /// Which products run cuBLASLt's epilogues (EpilogueFusion).
  void setEpilogues(const EpilogueFusion &fusion) { epilogues = fusion; }
  /// With `enabled`, the backward runs its weight-gradient products (and
  /// bias gradients) on a second stream with a cuBLASLt workspace of its
  /// own, beside the dx products, attention and LayerNorms that the next
  /// layer waits for; the training stream waits for a dW product only
  /// before overwriting what it reads, and for all of them before
  /// backward() returns (and before telling a GradientListener). Same
  /// kernels on the same data: the gradients are the same bits. A step a
  /// profiler records runs them on the training stream (its phases are
  /// timed one after another).
  void setWeightGradientStream(bool enabled);
  /// Times each phase's launches while `profiler` records a step (null:
  /// never; StepProfile.h).
  void setProfiler(StepProfiler *profiler) { this->profiler = profiler; }

private:
  struct Layer;
  struct Workspace;
  struct WeightGradientStream;

  void bindHeadViews(const Layer &layer, AttentionBuffers &forward,
                     AttentionBackwardBuffers &backward) const;
  std::unique_ptr<LayerNormBackwardLaunch>
  normBackwardLaunch(CUdeviceptr x, std::int64_t weightOffset,
                     std::int64_t biasOffset, CUdeviceptr mean,
                     CUdeviceptr rstd) const;
  /// Whether this forward adds the residual stream inside the LayerNorms:
  /// with residual kernels, unless it drops (a dropped branch is added by
  /// TrainKernels::dropoutAdd). The backward always does with them.
  bool residualInNorms() const { return residualNorms && !activeDropout; }
  void forwardLayer(std::int64_t index, const Stream &stream);
  void backwardLayer(std::int64_t index, const Stream &stream);
  /// out = a + drop(b) at `site` under the last forward's masks, or a + b
  /// when it dropped nothing; a = 0: drop(b), or b itself (returned).
  CUdeviceptr addDropped(CUdeviceptr a, CUdeviceptr b, CUdeviceptr out,
                         std::int64_t n, std::uint32_t site,
                         const Stream &stream);
  /// The stream the weight-gradient products of this backward run on:
  /// null for the training stream.
  WeightGradientStream *weightGradientSide() const;
  void weightBackward(const LinearShape &shape, CUdeviceptr dy, CUdeviceptr x,
                      std::int64_t weightOffset, std::int64_t biasOffset,
                      const Stream &stream);
  void linearBackward(const LinearShape &shape, CUdeviceptr dy, CUdeviceptr x,
                      std::int64_t weightOffset, std::int64_t biasOffset,
                      CUdeviceptr dx, const Stream &stream);
  /// The parameter at `offset` in the working copy (`dtype`) and its f32
  /// gradient.
  CUdeviceptr weight(std::int64_t offset) const;
  CUdeviceptr gradient(std::int64_t offset) const;

  GptConfig config;
  ParameterLayout layout;
  std::int64_t batch, seq;
  DType dtype;
  const GptKernels &kernels;
  const TrainKernels &trainKernels;
  Matmul &matmul;
  CUdeviceptr weights, grads;
  std::vector<std::unique_ptr<Layer>> layers;
  std::unique_ptr<Workspace> work;
  std::unique_ptr<WeightGradientStream> weightGradStream; // When enabled.
  std::size_t bytesHeld = 0;
  StepProfiler *profiler = nullptr;
  DropoutDraw dropout;
  EpilogueFusion epilogues;
  /// GptKernels::headViews(): no [B, H, T, D] copies.
  bool headViews;
  /// The kernels have residual LayerNorms (GptKernels).
  bool residualNorms;
  /// The last forward's masks, which its backward regenerates; none when it
  /// dropped nothing.
  std::optional<DropoutDraw> activeDropout;
};

} // namespace fa::train

#endif // FA_TRAIN_GPTMODEL_H
