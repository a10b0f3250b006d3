//===- PhiloxTest.cpp - Philox-4x32-10 and the dropout mask function ------===//

#include "fa/runtime/Philox.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace fa {
namespace {

struct KnownAnswer {
  PhiloxCounter counter;
  PhiloxKey key;
  PhiloxCounter expected;
};

// Random123's kat_vectors, the three "philox4x32 10" lines (counter, key,
// result).
constexpr KnownAnswer kKnownAnswers[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

TEST(PhiloxTest, MatchesRandom123KnownAnswers) {
  for (const KnownAnswer &answer : kKnownAnswers)
    EXPECT_EQ(philox4x32_10(answer.counter, answer.key), answer.expected);
}

// The generator is constexpr: the first vector checked at compile time too.
static_assert(philox4x32_10({0, 0, 0, 0}, {0, 0})[0] == 0x6627e8d5 &&
              philox4x32_10({0, 0, 0, 0}, {0, 0})[3] == 0x9b00dbd8);

TEST(PhiloxTest, DropoutBitsAreTheDocumentedWordOfTheDocumentedBlock) {
  std::uint64_t seed = 0x0123456789abcdefull;
  DropoutPosition position{/*batch=*/2, /*head=*/3, /*heads=*/5,
                           /*query=*/17, /*key=*/42};
  PhiloxCounter block =
      philox4x32_10({42 / 4, 17, 2 * 5 + 3, 7}, {0x89abcdefu, 0x01234567u});
  EXPECT_EQ(dropoutBits(seed, 7, position), block[42 % 4]);
  // Keys 40..43 share the block, one word each.
  for (std::uint32_t key = 40; key < 44; ++key) {
    position.key = key;
    EXPECT_EQ(dropoutBits(seed, 7, position), block[key % 4]) << key;
  }
}

TEST(PhiloxTest, EveryCoordinateChangesTheBits) {
  DropoutPosition base{1, 1, 4, 9, 13};
  std::uint32_t bits = dropoutBits(5, 3, base);
  EXPECT_NE(dropoutBits(6, 3, base), bits);
  EXPECT_NE(dropoutBits(5ull | (1ull << 32), 3, base), bits);
  EXPECT_NE(dropoutBits(5, 4, base), bits);
  for (std::uint32_t DropoutPosition::*field :
       {&DropoutPosition::batch, &DropoutPosition::head,
        &DropoutPosition::query, &DropoutPosition::key}) {
    DropoutPosition moved = base;
    moved.*field += 1;
    EXPECT_NE(dropoutBits(5, 3, moved), bits);
  }
}

TEST(PhiloxTest, ThresholdIsFloorOfPTimesTwoToThe32) {
  EXPECT_EQ(dropoutThreshold(0.0f), 0u);
  EXPECT_EQ(dropoutThreshold(0.5f), 0x80000000u);
  EXPECT_EQ(dropoutThreshold(0.25f), 0x40000000u);
  // 0.1f is 0x3dcccccd = 13421773 * 2^-27: times 2^32 is 429496736.
  EXPECT_EQ(dropoutThreshold(0.1f), 429496736u);
  // The largest f32 below 1: 2^32 - 2^8, still a uint32.
  EXPECT_EQ(dropoutThreshold(0.99999994f), 0xffffff00u);
  EXPECT_FLOAT_EQ(dropoutScale(0.2f), 1.25f);
}

TEST(PhiloxTest, PZeroKeepsEverything) {
  for (std::uint32_t key = 0; key < 64; ++key)
    EXPECT_TRUE(dropoutKeep(11, 0, {0, 0, 1, 3, key}, 0.0f));
}

// Over 2^20 positions of a fixed seed (a deterministic test), the kept
// fraction is within 0.5% of 1 - p. The binomial standard deviation at
// p = 0.5 is 0.05%, so 0.5% is ten deviations: a correct generator never
// fails, while a wrong threshold rule (e.g. keeping below the threshold, or
// one word reused for a block) does.
TEST(PhiloxTest, KeepFractionIsOneMinusP) {
  constexpr std::uint32_t kQueries = 1024, kKeys = 1024;
  for (float p : {0.1f, 0.5f}) {
    std::uint64_t kept = 0;
    for (std::uint32_t query = 0; query < kQueries; ++query)
      for (std::uint32_t key = 0; key < kKeys; ++key)
        kept += dropoutKeep(0x5eed, 1, {1, 2, 4, query, key}, p);
    double fraction = static_cast<double>(kept) / (kQueries * kKeys);
    EXPECT_NEAR(fraction, 1.0 - p, 0.005) << "p = " << p;
  }
}

} // namespace
} // namespace fa
