//===- GptConfig.cpp ------------------------------------------------------===//

#include "fa/train/GptConfig.h"

#include "fa/runtime/CheckedMath.h"
#include "fa/runtime/Error.h"

#include <cmath>
#include <random>

namespace fa::train {

void GptConfig::validate() const {
  auto positive = [](const char *name, std::int64_t value) {
    if (value <= 0)
      throw Error(std::string("GPT config: ") + name +
                  " must be positive, got " + std::to_string(value));
  };
  positive("layers", layers);
  positive("d_model", dModel);
  positive("heads", heads);
  positive("seq", seq);
  positive("vocab", vocab);
  if (dModel % heads != 0)
    throw Error("GPT config: heads (" + std::to_string(heads) +
                ") must divide d_model (" + std::to_string(dModel) + ")");
}

std::string GptConfig::describe() const {
  return "layers=" + std::to_string(layers) +
         " d_model=" + std::to_string(dModel) +
         " heads=" + std::to_string(heads) + " seq=" + std::to_string(seq) +
         " vocab=" + std::to_string(vocab) + (tiedHead ? " tied" : " untied");
}

ParameterLayout::ParameterLayout(const GptConfig &config) {
  config.validate();
  const std::int64_t c = config.dModel, f = config.mlpHidden();
  auto add = [&](std::string name, std::vector<std::int64_t> shape,
                 ParameterInit init) {
    ParameterTensor tensor{std::move(name), std::move(shape), total, 1, init};
    for (std::int64_t extent : tensor.shape)
      tensor.size *= extent;
    total += roundUp(tensor.size, kParameterAlignment);
    entries.push_back(std::move(tensor));
    return entries.back().offset;
  };
  using Init = ParameterInit;
  add("wte", {config.vocab, c}, Init::Normal);
  add("wpe", {config.seq, c}, Init::Normal);
  for (std::int64_t l = 0; l < config.layers; ++l) {
    std::string p = "layer" + std::to_string(l) + ".";
    LayerParameters layer;
    layer.ln1W = add(p + "ln1_w", {c}, Init::Ones);
    layer.ln1B = add(p + "ln1_b", {c}, Init::Zeros);
    layer.qkvW = add(p + "qkv_w", {3 * c, c}, Init::Normal);
    layer.qkvB = add(p + "qkv_b", {3 * c}, Init::Zeros);
    layer.projW = add(p + "proj_w", {c, c}, Init::ResidualNormal);
    layer.projB = add(p + "proj_b", {c}, Init::Zeros);
    layer.ln2W = add(p + "ln2_w", {c}, Init::Ones);
    layer.ln2B = add(p + "ln2_b", {c}, Init::Zeros);
    layer.fcW = add(p + "fc_w", {f, c}, Init::Normal);
    layer.fcB = add(p + "fc_b", {f}, Init::Zeros);
    layer.fcProjW = add(p + "fc_proj_w", {c, f}, Init::ResidualNormal);
    layer.fcProjB = add(p + "fc_proj_b", {c}, Init::Zeros);
    layerOffsets.push_back(layer);
  }
  lnfWOffset = add("lnf_w", {c}, Init::Ones);
  lnfBOffset = add("lnf_b", {c}, Init::Zeros);
  headOffset = config.tiedHead
                   ? entries[0].offset
                   : add("lm_head_w", {config.vocab, c}, Init::Normal);
}

std::int64_t ParameterLayout::parameterCount() const {
  std::int64_t count = 0;
  for (const ParameterTensor &tensor : entries)
    count += tensor.size;
  return count;
}

const ParameterTensor &ParameterLayout::find(const std::string &name) const {
  for (const ParameterTensor &tensor : entries)
    if (tensor.name == name)
      return tensor;
  throw Error("GPT parameters: no tensor named '" + name + "'");
}

std::vector<float> initialParameters(const ParameterLayout &layout,
                                     const GptConfig &config,
                                     std::uint64_t seed) {
  std::vector<float> values(static_cast<std::size_t>(layout.totalSize()), 0.0f);
  std::mt19937_64 rng(seed);
  const double residualStd = kInitStd / std::sqrt(2.0 * config.layers);
  for (const ParameterTensor &tensor : layout.tensors()) {
    float *data = values.data() + tensor.offset;
    switch (tensor.init) {
    case ParameterInit::Zeros:
      break;
    case ParameterInit::Ones:
      std::fill(data, data + tensor.size, 1.0f);
      break;
    case ParameterInit::Normal:
    case ParameterInit::ResidualNormal: {
      std::normal_distribution<double> normal(
          0.0, tensor.init == ParameterInit::Normal ? kInitStd : residualStd);
      for (std::int64_t i = 0; i < tensor.size; ++i)
        data[i] = static_cast<float>(normal(rng));
      break;
    }
    }
  }
  return values;
}

} // namespace fa::train
