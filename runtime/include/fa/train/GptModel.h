//===- GptModel.h - The GPT model's forward and backward on a GPU -*- C++
//-*-===//
//
// The model GptConfig.h describes, for one batch shape, on the kernels of the
// project: attention and LayerNorm (forward and backward) from the compiler's
// kernel library, linear layers from cuBLASLt (Matmul.h), the rest from
// TrainKernels.h. Activations are `dtype` (bf16, or f32 for exact checks),
// accumulation f32, parameter gradients f32 in the flat layout.
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

  /// Chooses (through the tuning cache when there is one) and loads the
  /// causal attention kernels for head_dim D, with `dropout` their dropout
  /// variant too, and the LayerNorm kernels for rows of d_model, all of
  /// `dtype`; throws, saying what is missing, when the library lacks one.
  static GptKernels load(const KernelLibrary &library, const TuningCache *cache,
                         const DeviceInfo &device, const GptConfig &config,
                         DType dtype, bool dropout = false);
  /// One line per kernel: "attention forward: <name>".
  std::string describe() const;
};

class GptModel {
public:
  /// Activations for `batch` sequences of `seq` <= config.seq tokens.
  /// `dropout`: p and seed of the training forwards' masks (Dropout.h; its
  /// step is ignored, each forward names its own); p > 0 needs `kernels`
  /// loaded with dropout.
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
  static std::size_t plannedActivationBytes(const GptConfig &config,
                                            std::int64_t batch,
                                            std::int64_t seq, DType dtype);
  std::int64_t rows() const { return batch * seq; }
  /// Whether the MLP's GELU (forward and backward) and the linear layers'
  /// bias gradients run inside the cuBLASLt products (Matmul.h's epilogues;
  /// the default) or as TrainKernels launches of their own: the two are
  /// kept for measuring one against the other and for checking them.
  void setFusedEpilogues(bool fused) { fusedEpilogues = fused; }
  /// Times each phase's launches while `profiler` records a step (null:
  /// never; StepProfile.h).
  void setProfiler(StepProfiler *profiler) { this->profiler = profiler; }

private:
  struct Layer;
  struct Workspace;

  void forwardLayer(std::int64_t index, const Stream &stream);
  void backwardLayer(std::int64_t index, const Stream &stream);
  /// out = a + drop(b) at `site` under the last forward's masks, or a + b
  /// when it dropped nothing; a = 0: drop(b), or b itself (returned).
  CUdeviceptr addDropped(CUdeviceptr a, CUdeviceptr b, CUdeviceptr out,
                         std::int64_t n, std::uint32_t site,
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
  std::size_t bytesHeld = 0;
  StepProfiler *profiler = nullptr;
  DropoutDraw dropout;
  bool fusedEpilogues = true;
  /// The last forward's masks, which its backward regenerates; none when it
  /// dropped nothing.
  std::optional<DropoutDraw> activeDropout;
};

} // namespace fa::train

#endif // FA_TRAIN_GPTMODEL_H
