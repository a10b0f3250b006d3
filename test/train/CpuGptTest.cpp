//===- CpuGptTest.cpp - the fp64 GPT reference checks itself --------------===//
//
// The reference is what the GPU step is gradient-checked against, so its own
// gradients are checked here against central finite differences of its loss
// (sampled entries of every parameter tensor, tied and untied), and its
// forward against losses from an independent NumPy transcription of the math,
// the causal mask by per-position losses, and its argument checks.
//
//===----------------------------------------------------------------------===//

#include "fa/train/CpuGpt.h"

#include "fa/runtime/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace fa;
using namespace fa::train;

namespace {

GptConfig tinyConfig(bool tied) {
  GptConfig config;
  config.layers = 2;
  config.dModel = 16;
  config.heads = 2;
  config.seq = 8;
  config.tiedHead = tied;
  return config;
}

std::vector<std::int32_t> randomBytes(std::int64_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int32_t> byte(0, kByteVocab - 1);
  std::vector<std::int32_t> values(count);
  for (std::int32_t &value : values)
    value = byte(rng);
  return values;
}

/// GPT-2's initialisation in double, with N(0, 0.1) noise on the LayerNorm
/// weights and every bias (all ones or zeros otherwise, which would hide a
/// wrong gradient through them), and the matrices scaled up 5x: attention is
/// then far from uniform and every tensor's gradient far above the tolerance.
std::vector<double> testParameters(const GptConfig &config,
                                   const ParameterLayout &layout,
                                   std::uint64_t seed) {
  const std::vector<float> initial = initialParameters(layout, config, seed);
  std::vector<double> parameters(initial.begin(), initial.end());
  std::mt19937_64 rng(seed + 1);
  std::normal_distribution<double> noise(0.0, 0.1);
  for (const ParameterTensor &tensor : layout.tensors()) {
    double *data = parameters.data() + tensor.offset;
    const bool constant = tensor.init == ParameterInit::Zeros ||
                          tensor.init == ParameterInit::Ones;
    for (std::int64_t i = 0; i < tensor.size; ++i)
      data[i] = constant ? data[i] + noise(rng) : data[i] * 5.0;
  }
  return parameters;
}

/// One call's inputs.
struct Problem {
  GptConfig config;
  ParameterLayout layout;
  std::vector<double> parameters;
  std::vector<std::int32_t> tokens, targets;
  std::int64_t batch, seq;
  std::optional<DropoutDraw> dropout;

  Problem(const GptConfig &config, std::int64_t batch, std::int64_t seq,
          std::uint64_t seed)
      : config(config), layout(config),
        parameters(testParameters(config, layout, seed)),
        tokens(randomBytes(batch * seq, seed + 2)),
        targets(randomBytes(batch * seq, seed + 3)), batch(batch), seq(seq) {}

  double loss() const {
    return cpuGptLoss(config, layout, parameters, tokens, targets, batch, seq,
                      dropout);
  }
  CpuGptResult lossAndGradients() const {
    return cpuGptLossAndGradients(config, layout, parameters, tokens, targets,
                                  batch, seq, dropout);
  }
  std::vector<double> positionLosses() const {
    return cpuGptPositionLosses(config, layout, parameters, tokens, targets,
                                batch, seq, dropout);
  }
};

/// Up to `count` entries of `tensor`; wte's are taken from rows of tokens in
/// the batch, whose embedding gradient is not zero.
std::vector<std::int64_t> sampleEntries(const Problem &problem,
                                        const ParameterTensor &tensor,
                                        std::int64_t count,
                                        std::mt19937_64 &rng) {
  const std::int64_t cols = tensor.shape.back();
  std::vector<std::int64_t> entries;
  for (std::int64_t i = 0; i < std::min(count, tensor.size); ++i) {
    std::int64_t entry = static_cast<std::int64_t>(rng() % tensor.size);
    if (tensor.name == "wte")
      entry = problem.tokens[rng() % problem.tokens.size()] * cols +
              static_cast<std::int64_t>(rng() % cols);
    entries.push_back(entry);
  }
  return entries;
}

double centralDifference(Problem &problem, std::int64_t index, double step) {
  const double saved = problem.parameters[index];
  problem.parameters[index] = saved + step;
  const double plus = problem.loss();
  problem.parameters[index] = saved - step;
  const double minus = problem.loss();
  problem.parameters[index] = saved;
  return (plus - minus) / (2 * step);
}

void checkGradientsByFiniteDifferences(Problem problem) {
  const CpuGptResult result = problem.lossAndGradients();
  ASSERT_EQ(static_cast<std::int64_t>(result.gradients.size()),
            problem.layout.totalSize());
  EXPECT_DOUBLE_EQ(result.loss, problem.loss());
  std::mt19937_64 rng(7);
  for (const ParameterTensor &tensor : problem.layout.tensors()) {
    double largest = 0;
    for (std::int64_t entry : sampleEntries(problem, tensor, 5, rng)) {
      const std::int64_t index = tensor.offset + entry;
      const double numeric = centralDifference(problem, index, 1e-5);
      const double analytic = result.gradients[index];
      EXPECT_NEAR(analytic, numeric, 1e-8 * std::max(1.0, std::abs(numeric)))
          << tensor.name << "[" << entry << "]";
      largest = std::max(largest, std::abs(numeric));
    }
    // Gradients far above the tolerance, or the check would be vacuous.
    EXPECT_GT(largest, 1e-4) << tensor.name;
  }
}

TEST(CpuGptTest, GradientsMatchFiniteDifferencesTied) {
  checkGradientsByFiniteDifferences(Problem(tinyConfig(true), 2, 7, 11));
}

TEST(CpuGptTest, GradientsMatchFiniteDifferencesUntied) {
  GptConfig config = tinyConfig(false);
  config.heads = 4;
  checkGradientsByFiniteDifferences(Problem(config, 3, 8, 12));
}

// With dropout the loss is still a smooth function of the parameters (the
// masks depend on the seed and step only), so its gradient is checked the
// same way: every dropout site's mask reaches the loss and the backward.
TEST(CpuGptTest, GradientsWithDropoutMatchFiniteDifferences) {
  Problem problem(tinyConfig(true), 2, 8, 14);
  problem.dropout = DropoutDraw{0.25f, 99, 5};
  checkGradientsByFiniteDifferences(problem);
}

TEST(CpuGptTest, DropoutChangesTheLossAndZeroDropsNothing) {
  Problem problem(tinyConfig(false), 2, 8, 15);
  const double undropped = problem.loss();
  problem.dropout = DropoutDraw{0.0f, 99, 5};
  EXPECT_EQ(problem.loss(), undropped);
  problem.dropout = DropoutDraw{0.25f, 99, 5};
  const double dropped = problem.loss();
  EXPECT_NE(dropped, undropped);
  // Another step draws other masks; the same step the same ones.
  problem.dropout->step = 6;
  EXPECT_NE(problem.loss(), dropped);
  problem.dropout->step = 5;
  EXPECT_EQ(problem.loss(), dropped);
  problem.dropout->p = 1.0f;
  EXPECT_THROW(problem.loss(), Error);
}

TEST(CpuGptTest, GradientsAreZeroOnPaddingAndUnusedPositions) {
  Problem problem(tinyConfig(true), 2, 5, 13);
  const CpuGptResult result = problem.lossAndGradients();
  std::vector<bool> inTensor(result.gradients.size(), false);
  for (const ParameterTensor &tensor : problem.layout.tensors())
    std::fill(inTensor.begin() + tensor.offset,
              inTensor.begin() + tensor.offset + tensor.size, true);
  for (std::size_t i = 0; i < inTensor.size(); ++i) {
    if (!inTensor[i]) {
      EXPECT_EQ(result.gradients[i], 0.0) << "padding element " << i;
    }
  }
  const ParameterTensor &wpe = problem.layout.wpe();
  const std::int64_t c = problem.config.dModel;
  for (std::int64_t i = problem.seq * c; i < wpe.size; ++i)
    EXPECT_EQ(result.gradients[wpe.offset + i], 0.0) << "wpe[" << i << "]";
}

TEST(CpuGptTest, TiedHeadSumsEmbeddingAndHeadGradients) {
  Problem tied(tinyConfig(true), 2, 6, 14);
  Problem untied(tinyConfig(false), 2, 6, 14);
  untied.tokens = tied.tokens;
  untied.targets = tied.targets;
  // Same parameters, lm_head_w a copy of wte: the two models are one function.
  std::copy(tied.parameters.begin(), tied.parameters.end(),
            untied.parameters.begin());
  const ParameterTensor &wte = untied.layout.wte();
  std::copy_n(tied.parameters.begin() + wte.offset, wte.size,
              untied.parameters.begin() + untied.layout.head());
  const CpuGptResult tiedResult = tied.lossAndGradients();
  const CpuGptResult untiedResult = untied.lossAndGradients();
  EXPECT_NEAR(tiedResult.loss, untiedResult.loss, 1e-12);
  for (std::int64_t i = 0; i < wte.size; ++i)
    ASSERT_NEAR(tiedResult.gradients[wte.offset + i],
                untiedResult.gradients[wte.offset + i] +
                    untiedResult.gradients[untied.layout.head() + i],
                1e-12)
        << "wte[" << i << "]";
  const ParameterTensor &fcW = tied.layout.find("layer1.fc_w");
  for (std::int64_t i = 0; i < fcW.size; ++i)
    ASSERT_NEAR(tiedResult.gradients[fcW.offset + i],
                untiedResult.gradients[fcW.offset + i], 1e-12);
}

/// Entry i of tensor number k is a * sin(0.37 i + 0.5 + 1.1 k) (plus 1 for
/// LayerNorm weights): a formula another implementation can rebuild.
std::vector<double> wavyParameters(const ParameterLayout &layout) {
  std::vector<double> parameters(layout.totalSize(), 0.0);
  for (std::size_t k = 0; k < layout.tensors().size(); ++k) {
    const ParameterTensor &tensor = layout.tensors()[k];
    const bool matrix = tensor.init == ParameterInit::Normal ||
                        tensor.init == ParameterInit::ResidualNormal;
    const double base = tensor.init == ParameterInit::Ones ? 1.0 : 0.0;
    for (std::int64_t i = 0; i < tensor.size; ++i)
      parameters[tensor.offset + i] =
          base + (matrix ? 0.2 : 0.1) * std::sin(0.37 * i + 0.5 + 1.1 * k);
  }
  return parameters;
}

TEST(CpuGptTest, MatchesAnIndependentForward) {
  // The gradient checks only show that backward matches forward; these losses
  // pin the forward itself. They come from a NumPy transcription of
  // GptConfig.h's math (batched matrix products, a -inf mask, the same
  // wavyParameters), tied and untied.
  const double expectedLoss[2] = {5.172875521447631, 5.622312038425191};
  for (bool tied : {false, true}) {
    GptConfig config = tinyConfig(tied);
    config.dModel = 8;
    config.seq = 6;
    const ParameterLayout layout(config);
    const std::int64_t batch = 2, seq = 5; // wpe's last row unused.
    std::vector<std::int32_t> tokens, targets;
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t t = 0; t < seq; ++t) {
        tokens.push_back((7 * b + 31 * t + 3) % kByteVocab);
        targets.push_back((13 * b + 17 * t + 5) % kByteVocab);
      }
    EXPECT_NEAR(cpuGptLoss(config, layout, wavyParameters(layout), tokens,
                           targets, batch, seq),
                expectedLoss[tied], 1e-12)
        << config.describe();
  }
}

TEST(CpuGptTest, InitialLossIsNearUniform) {
  GptConfig config = tinyConfig(true);
  config.dModel = 32;
  const ParameterLayout layout(config);
  const std::vector<float> initial = initialParameters(layout, config, 21);
  const std::vector<double> parameters(initial.begin(), initial.end());
  const std::vector<std::int32_t> tokens = randomBytes(16, 22);
  const std::vector<std::int32_t> targets = randomBytes(16, 23);
  const double loss =
      cpuGptLoss(config, layout, parameters, tokens, targets, 2, 8);
  // Logits have std ~0.02 sqrt(C): the loss is log(V) plus ~var/2.
  EXPECT_NEAR(loss, std::log(256.0), 0.05);
  const std::vector<double> losses =
      cpuGptPositionLosses(config, layout, parameters, tokens, targets, 2, 8);
  double sum = 0;
  for (double value : losses)
    sum += value;
  EXPECT_NEAR(loss, sum / 16, 1e-12);
}

TEST(CpuGptTest, PositionsSeeOnlyEarlierTokens) {
  Problem problem(tinyConfig(true), 2, 8, 15);
  const std::vector<double> before = problem.positionLosses();
  const std::int64_t changed = 4; // In batch row 0.
  problem.tokens[changed] = (problem.tokens[changed] + 1) % kByteVocab;
  const std::vector<double> after = problem.positionLosses();
  for (std::int64_t t = 0; t < changed; ++t)
    EXPECT_EQ(before[t], after[t]) << "position " << t;
  for (std::int64_t t = changed; t < problem.seq; ++t)
    EXPECT_NE(before[t], after[t]) << "position " << t;
  for (std::int64_t t = problem.seq; t < 2 * problem.seq; ++t)
    EXPECT_EQ(before[t], after[t]) << "batch row 1, position " << t - 8;
}

TEST(CpuGptTest, RejectsBadInputs) {
  Problem good(tinyConfig(true), 2, 4, 16);
  auto loss = [](const Problem &p) { return p.loss(); };
  EXPECT_NO_THROW(loss(good));

  Problem bad = good;
  bad.tokens[3] = 256;
  EXPECT_THROW(loss(bad), Error);
  bad = good;
  bad.tokens[0] = -1;
  EXPECT_THROW(loss(bad), Error);
  bad = good;
  bad.targets[7] = 300;
  EXPECT_THROW(bad.lossAndGradients(), Error);
  bad = good;
  bad.tokens.pop_back();
  EXPECT_THROW(loss(bad), Error);
  bad = good;
  bad.targets.push_back(0);
  EXPECT_THROW(bad.positionLosses(), Error);
  bad = good;
  bad.parameters.pop_back();
  EXPECT_THROW(loss(bad), Error);
  bad = good;
  bad.batch = 0;
  bad.tokens.clear();
  bad.targets.clear();
  EXPECT_THROW(loss(bad), Error);

  // seq 9 with a position table of 8.
  Problem tooLong(tinyConfig(true), 1, 9, 17);
  EXPECT_THROW(loss(tooLong), Error);

  // An untied layout handed in with the tied config.
  const ParameterLayout untied(tinyConfig(false));
  std::vector<double> parameters(untied.totalSize(), 0.0);
  EXPECT_THROW(cpuGptLoss(good.config, untied, parameters, good.tokens,
                          good.targets, good.batch, good.seq),
               Error);
}

} // namespace
