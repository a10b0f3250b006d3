//===- GradCheck.cpp - The GPU model's gradients against fp64 -------------===//

#include "fa/train/GradCheck.h"

#include "fa/runtime/Error.h"
#include "fa/runtime/Nvtx.h"
#include "fa/train/CpuGpt.h"
#include "fa/train/Data.h"
#include "fa/train/GptModel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

namespace fa::train {

double defaultGradTolerance(DType dtype) {
  return dtype == DType::F32 ? 1e-4 : 3e-2;
}

bool GradCheckResult::passed() const {
  return !tensors.empty() &&
         std::all_of(tensors.begin(), tensors.end(),
                     [](const TensorGradError &t) { return t.passed; });
}

namespace {

/// GPT-2's initialisation, with biases ~ N(0, 0.02) and LayerNorm weights
/// ~ 1 + N(0, 0.1) instead of exact zeros and ones.
std::vector<float> perturbedParameters(const ParameterLayout &layout,
                                       const GptConfig &config,
                                       std::uint64_t seed) {
  std::vector<float> values = initialParameters(layout, config, seed);
  std::mt19937_64 rng(seed + 1);
  std::normal_distribution<double> noise(0.0, 1.0);
  for (const ParameterTensor &tensor : layout.tensors()) {
    double scale = tensor.init == ParameterInit::Zeros  ? 0.02
                   : tensor.init == ParameterInit::Ones ? 0.1
                                                        : 0.0;
    for (std::int64_t i = 0; scale > 0 && i < tensor.size; ++i)
      values[tensor.offset + i] += static_cast<float>(scale * noise(rng));
  }
  return values;
}

DeviceBuffer uploadTokens(const std::string &name,
                          const std::vector<std::int32_t> &values) {
  DeviceBuffer buffer(name, values.size() * sizeof(std::int32_t));
  buffer.upload(tokenBytes(values));
  return buffer;
}

TensorGradError compareTensor(const ParameterTensor &tensor,
                              const std::vector<float> &gpu,
                              const std::vector<double> &reference,
                              double tolerance) {
  TensorGradError result{tensor.name};
  double diff = 0, norm = 0;
  for (std::int64_t i = tensor.offset; i < tensor.offset + tensor.size; ++i) {
    double delta = gpu[i] - reference[i];
    diff += delta * delta;
    norm += reference[i] * reference[i];
    result.maxAbs = std::max(result.maxAbs, std::abs(delta));
  }
  result.refNorm = std::sqrt(norm);
  result.error = std::sqrt(diff) / std::max(result.refNorm, 1e-30);
  // NaN fails: the comparison is false.
  result.passed = result.error <= tolerance;
  return result;
}

} // namespace

GradCheckResult runGradCheck(const GradCheckOptions &options,
                             const Context &context,
                             const KernelLibrary &library) {
  const GptConfig &config = options.model;
  ParameterLayout layout(config);
  const std::int64_t seq = config.seq, rows = options.batch * seq;
  GradCheckResult result;
  result.tolerance = options.tolerance > 0
                         ? options.tolerance
                         : defaultGradTolerance(options.dtype);

  std::mt19937_64 rng(options.seed);
  std::vector<std::int32_t> tokens(rows), targets(rows);
  for (std::int64_t i = 0; i < rows; ++i) {
    tokens[i] = static_cast<std::int32_t>(rng() % config.vocab);
    targets[i] = static_cast<std::int32_t>(rng() % config.vocab);
  }

  const DropoutDraw dropout{options.dropout, options.seed, kDropoutCheckStep};
  GptKernels kernels =
      GptKernels::load(library, nullptr, context.device(), config,
                       options.dtype, options.dropout > 0, options.headViews);
  TrainKernels trainKernels;
  Matmul matmul;
  Stream stream;
  const std::int64_t n = layout.totalSize();
  DeviceBuffer master("grad check master weights", n * sizeof(float));
  DeviceBuffer working("grad check weights", n * dtypeBytes(options.dtype));
  DeviceBuffer grads("grad check gradients", n * sizeof(float));
  std::vector<float> initial =
      perturbedParameters(layout, config, options.seed);
  master.upload(encode(initial, DType::F32));
  // NaN everywhere: a gradient the backward adds to instead of writing
  // (only wte's, after the tied head wrote it, may be) shows as NaN.
  grads.fill(0xFF, stream.get());
  trainKernels.castFromF32(options.dtype, master.get(), working.get(), n,
                           stream);
  DeviceBuffer tokenBuffer = uploadTokens("grad check tokens", tokens);
  DeviceBuffer targetBuffer = uploadTokens("grad check targets", targets);

  GptModel model(config, options.batch, seq, options.dtype, kernels,
                 trainKernels, matmul, working.get(), grads.get(), dropout);
  model.setEpilogues(options.epilogues);
  model.setWeightGradientStream(options.weightGradStream);
  {
    NvtxRange range{"grad check: GPU forward and backward"};
    model.forward(tokenBuffer.get(), targetBuffer.get(), true, stream,
                  dropout.step);
    model.backward(tokenBuffer.get(), stream);
    stream.synchronize();
  }
  std::vector<float> gpuGrads = decode(grads.download(), DType::F32);
  for (float loss : model.downloadLosses())
    result.gpuLoss += loss / static_cast<double>(rows);

  // The reference sees the parameters the GPU saw: rounded to the dtype.
  std::vector<float> rounded = decode(working.download(), options.dtype);
  std::vector<double> parameters(rounded.begin(), rounded.end());
  CpuGptResult reference;
  {
    NvtxRange range{"grad check: fp64 CPU reference"};
    reference = cpuGptLossAndGradients(
        config, layout, parameters, tokens, targets, options.batch, seq,
        options.dropout > 0 ? std::optional<DropoutDraw>(dropout)
                            : std::nullopt);
  }
  result.referenceLoss = reference.loss;
  for (const ParameterTensor &tensor : layout.tensors())
    result.tensors.push_back(
        compareTensor(tensor, gpuGrads, reference.gradients, result.tolerance));
  return result;
}

std::string formatGradCheck(const GradCheckResult &result) {
  std::string text =
      "| tensor | rel L2 error | max abs error | fp64 norm | result |\n"
      "|---|---|---|---|---|\n";
  char line[256];
  for (const TensorGradError &t : result.tensors) {
    std::snprintf(line, sizeof line, "| %s | %.3e | %.3e | %.3e | %s |\n",
                  t.name.c_str(), t.error, t.maxAbs, t.refNorm,
                  t.passed ? "pass" : "FAIL");
    text += line;
  }
  std::snprintf(line, sizeof line,
                "loss: GPU %.8f, fp64 %.8f (difference %.2e)\n"
                "tolerance %.1e per tensor: %s\n",
                result.gpuLoss, result.referenceLoss,
                result.gpuLoss - result.referenceLoss, result.tolerance,
                result.passed() ? "all tensors pass" : "FAILED");
  return text + line;
}

} // namespace fa::train
