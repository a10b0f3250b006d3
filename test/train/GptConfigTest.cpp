//===- GptConfigTest.cpp - sizes, layout and initialisation ---------------===//

#include "fa/train/GptConfig.h"

#include "fa/runtime/Error.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace fa;
using namespace fa::train;

namespace {

GptConfig tiny() {
  GptConfig config;
  config.layers = 2;
  config.dModel = 12;
  config.heads = 3;
  config.seq = 5;
  return config;
}

TEST(GptConfigTest, RejectsBadSizes) {
  GptConfig config = tiny();
  config.heads = 5;
  EXPECT_THROW(config.validate(), Error);
  config = tiny();
  config.layers = 0;
  EXPECT_THROW(config.validate(), Error);
}

TEST(ParameterLayoutTest, CountsGpt2Parameters) {
  GptConfig config; // 6 layers, 384 wide, seq 256, tied.
  ParameterLayout layout(config);
  const std::int64_t c = 384;
  EXPECT_EQ(layout.parameterCount(),
            256 * c + 256 * c + 6 * (12 * c * c + 13 * c) + 2 * c);
  EXPECT_EQ(layout.head(), layout.wte().offset);
  config.tiedHead = false;
  ParameterLayout untied(config);
  EXPECT_EQ(untied.parameterCount(), layout.parameterCount() + 256 * c);
  EXPECT_EQ(untied.head(), untied.find("lm_head_w").offset);
}

TEST(ParameterLayoutTest, TensorsAreAlignedAndDisjoint) {
  ParameterLayout layout(tiny());
  std::int64_t end = 0;
  for (const ParameterTensor &tensor : layout.tensors()) {
    EXPECT_EQ(tensor.offset % ParameterLayout::kParameterAlignment, 0)
        << tensor.name;
    EXPECT_GE(tensor.offset, end) << tensor.name;
    end = tensor.offset + tensor.size;
  }
  EXPECT_LE(end, layout.totalSize());
  EXPECT_EQ(layout.layer(1).fcProjW, layout.find("layer1.fc_proj_w").offset);
  EXPECT_EQ(layout.lnfB(), layout.find("lnf_b").offset);
  EXPECT_THROW(layout.find("nope"), Error);
}

TEST(ParameterLayoutTest, InitialisesLikeGpt2) {
  GptConfig config = tiny();
  ParameterLayout layout(config);
  std::vector<float> values = initialParameters(layout, config, 1);
  EXPECT_EQ(values, initialParameters(layout, config, 1));
  EXPECT_NE(values, initialParameters(layout, config, 2));
  const ParameterTensor &ln = layout.find("layer0.ln1_w");
  const ParameterTensor &bias = layout.find("layer0.qkv_b");
  for (std::int64_t i = 0; i < ln.size; ++i)
    EXPECT_EQ(values[ln.offset + i], 1.0f);
  for (std::int64_t i = 0; i < bias.size; ++i)
    EXPECT_EQ(values[bias.offset + i], 0.0f);
  // Residual projections: std 0.02 / sqrt(2 * layers) = 0.01.
  const ParameterTensor &proj = layout.find("layer1.fc_proj_w");
  double squares = 0;
  for (std::int64_t i = 0; i < proj.size; ++i)
    squares += double(values[proj.offset + i]) * values[proj.offset + i];
  EXPECT_NEAR(std::sqrt(squares / proj.size), 0.01, 0.002);
}

} // namespace
