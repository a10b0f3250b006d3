//===- DropoutTest.cpp - The activation dropout masks of Dropout.h --------===//
//
// The masks' statistics and their independence: the share dropped is p's,
// sites, steps and seeds draw different masks, the eight elements of a
// Philox block are the block's eight 16-bit values, and an activation mask
// is not the attention mask drawn with the same seed and counter words.
//
//===----------------------------------------------------------------------===//

#include "fa/train/Dropout.h"

#include <gtest/gtest.h>

#include <cstdint>

using namespace fa;
using namespace fa::train;

namespace {

constexpr std::uint64_t kElements = 200'000;

/// The share of kElements elements that `draw` drops at `site`.
double droppedShare(const DropoutDraw &draw, std::uint32_t site) {
  std::uint64_t dropped = 0;
  for (std::uint64_t n = 0; n < kElements; ++n)
    dropped += activationDropoutFactor(draw, site, n) == 0.0f;
  return static_cast<double>(dropped) / kElements;
}

/// How many of kElements elements the two masks treat differently.
std::uint64_t disagreements(const DropoutDraw &a, std::uint32_t siteA,
                            const DropoutDraw &b, std::uint32_t siteB) {
  std::uint64_t count = 0;
  for (std::uint64_t n = 0; n < kElements; ++n)
    count += (activationDropoutFactor(a, siteA, n) == 0.0f) !=
             (activationDropoutFactor(b, siteB, n) == 0.0f);
  return count;
}

TEST(DropoutTest, DropsTheShareOfP) {
  for (float p : {0.05f, 0.2f, 0.5f}) {
    // 200k Bernoulli draws: the share's standard deviation is below 0.0012.
    EXPECT_NEAR(droppedShare({p, 1234, 7}, 3), p, 0.006) << "p " << p;
  }
  EXPECT_EQ(droppedShare({0.0f, 1234, 7}, 3), 0.0);
}

TEST(DropoutTest, KeptElementsAreScaledByOneOverOneMinusP) {
  const DropoutDraw draw{0.2f, 5, 1};
  for (std::uint64_t n = 0; n < 1000; ++n) {
    const float factor = activationDropoutFactor(draw, 0, n);
    EXPECT_TRUE(factor == 0.0f || factor == dropoutScale(0.2f)) << n;
  }
}

TEST(DropoutTest, SitesStepsAndSeedsDrawDifferentMasks) {
  const DropoutDraw draw{0.5f, 1234, 7};
  // Independent masks at p = 0.5 disagree on about half the elements.
  const std::uint64_t half = kElements / 2, slack = kElements / 50;
  EXPECT_NEAR(disagreements(draw, 1, draw, 2), half, slack) << "site";
  EXPECT_NEAR(disagreements(draw, 1, {0.5f, 1234, 8}, 1), half, slack)
      << "step";
  EXPECT_NEAR(disagreements(draw, 1, {0.5f, 1235, 7}, 1), half, slack)
      << "seed";
  EXPECT_EQ(disagreements(draw, 1, draw, 1), 0u);
}

TEST(DropoutTest, AnElementTakesItsBlocksSixteenBitValue) {
  const DropoutDraw draw{0.3f, 0xFEDCBA9876543210ull, 11};
  const std::uint32_t site = 4;
  for (std::uint64_t n : {0ull, 7ull, 8ull, 12345ull, (1ull << 35) + 9}) {
    const PhiloxCounter block =
        philox4x32_10({static_cast<std::uint32_t>(n / 8),
                       static_cast<std::uint32_t>(n / 8 >> 32), site, 11},
                      activationDropoutKey(draw.seed));
    const std::uint32_t word = block[(n % 8) / 2];
    const std::uint32_t bits = n % 2 == 0 ? word & 0xFFFFu : word >> 16;
    EXPECT_EQ(activationDropoutFactor(draw, site, n) == 0.0f,
              bits < dropoutThreshold(draw.p))
        << n;
  }
}

TEST(DropoutTest, ActivationMasksUseAnotherKeyThanAttention) {
  const std::uint64_t seed = 0x0123456789ABCDEFull;
  EXPECT_EQ(activationDropoutKey(seed)[0], dropoutKey(seed)[0]);
  EXPECT_NE(activationDropoutKey(seed)[1], dropoutKey(seed)[1]);
  // The same counter words under the two keys give different blocks.
  const PhiloxCounter counter{1, 2, 3, 4};
  EXPECT_NE(philox4x32_10(counter, activationDropoutKey(seed)),
            philox4x32_10(counter, dropoutKey(seed)));
}

TEST(DropoutTest, SitesAndOffsetsOfALayer) {
  EXPECT_EQ(embeddingDropoutSite(), 0u);
  EXPECT_EQ(attentionBranchDropoutSite(0), 1u);
  EXPECT_EQ(mlpBranchDropoutSite(0), 2u);
  EXPECT_EQ(attentionBranchDropoutSite(5), 11u);
  EXPECT_EQ(mlpBranchDropoutSite(5), 12u);
  EXPECT_EQ(attentionDropoutOffset(10, 6, 2), 62u);
}

} // namespace
