//===- PhiloxTest.cpp - Philox-4x32-10 and the dropout mask function ------===//

#include "fa/runtime/Philox.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

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

TEST(PhiloxTest, DropoutBitsAreTheDocumentedHalfOfTheDocumentedBlock) {
  std::uint64_t seed = 0x0123456789abcdefull;
  // Query 17, key 42: counter (8 * 1 + 2, 8 * 1 + 1, 2 * 5 + 3, 7), value
  // t = 4 * 0 + 1 = 1, the high half of word 0.
  PhiloxCounter block =
      philox4x32_10({10, 9, 2 * 5 + 3, 7}, {0x89abcdefu, 0x01234567u});
  DropoutPosition position{/*batch=*/2, /*head=*/3, /*heads=*/5,
                           /*query=*/17, /*key=*/42};
  EXPECT_EQ(dropoutCounter(7, position), (PhiloxCounter{10, 9, 13, 7}));
  EXPECT_EQ(dropoutSlot(position), 1u);
  EXPECT_EQ(dropoutBits(seed, 7, position), block[0] >> 16);
  // The block's eight values: queries 17, 25 times keys 34, 42, 50, 58,
  // value t = 4 ((query / 8) mod 2) + (key / 8) mod 4, word t / 2.
  for (std::uint32_t query : {17u, 25u})
    for (std::uint32_t key : {34u, 42u, 50u, 58u}) {
      position.query = query;
      position.key = key;
      std::uint32_t slot = 4 * (query / 8 % 2) + key / 8 % 4;
      EXPECT_EQ(dropoutSlot(position), slot);
      EXPECT_EQ(dropoutBits(seed, 7, position),
                (block[slot / 2] >> (16 * (slot % 2))) & 0xFFFF)
          << query << ", " << key;
    }
}

// Values of the mask function from an independent implementation of the
// specification (Python, from Philox.h's header comment and Random123's
// constants), so that a change of the function fails here: the kernels'
// masks must not change silently. The first is the low half of the first
// known-answer vector's word 0 (0x6627e8d5).
TEST(PhiloxTest, DropoutBitsMatchTheSpecificationsKnownValues) {
  struct Known {
    std::uint64_t seed;
    std::uint32_t offset;
    DropoutPosition position;
    std::uint32_t bits;
  };
  const Known known[] = {
      {0, 0, {0, 0, 1, 0, 0}, 0xe8d5},
      {0x0123456789abcdefull, 7, {2, 3, 5, 17, 42}, 0x526c},
      {0xffffffffffffffffull, 0xffffffffu, {1, 0, 2, 1000, 4099}, 0xd2f3},
      {42, 123456, {0, 0, 1, 8, 31}, 0x8614},
      {42, 123456, {0, 0, 1, 15, 24}, 0xefd2},
  };
  for (const Known &k : known)
    EXPECT_EQ(dropoutBits(k.seed, k.offset, k.position), k.bits)
        << "query " << k.position.query << " key " << k.position.key;
}

// Every (query, key) has its own 16 bits: over a 64 x 128 patch, no two
// positions share a (counter, value) pair, and each block serves exactly
// the eight positions {i0, i0 + 8} x {k0, k0 + 8, k0 + 16, k0 + 24}.
TEST(PhiloxTest, EachPositionHasItsOwnValue) {
  std::map<std::pair<PhiloxCounter, std::uint32_t>, DropoutPosition> owners;
  std::map<PhiloxCounter, int> blockUses;
  for (std::uint32_t query = 0; query < 64; ++query)
    for (std::uint32_t key = 0; key < 128; ++key) {
      DropoutPosition position{0, 0, 1, query, key};
      PhiloxCounter counter = dropoutCounter(0, position);
      auto [it, inserted] =
          owners.try_emplace({counter, dropoutSlot(position)}, position);
      EXPECT_TRUE(inserted)
          << "(" << query << ", " << key << ") and (" << it->second.query
          << ", " << it->second.key << ")";
      ++blockUses[counter];
      DropoutPosition partner{0, 0, 1, query ^ 8, key ^ 16};
      EXPECT_EQ(dropoutCounter(0, partner), counter);
    }
  for (const auto &[counter, uses] : blockUses)
    EXPECT_EQ(uses, 8);
  EXPECT_EQ(blockUses.size(), 64u * 128 / 8);
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

TEST(PhiloxTest, ThresholdIsFloorOfPTimesTwoToThe16) {
  EXPECT_EQ(dropoutThreshold(0.0f), 0u);
  EXPECT_EQ(dropoutThreshold(0.5f), 0x8000u);
  EXPECT_EQ(dropoutThreshold(0.25f), 0x4000u);
  // 0.1f is 0x3dcccccd = 13421773 * 2^-27: times 2^16 is 6553.6006.
  EXPECT_EQ(dropoutThreshold(0.1f), 6553u);
  // The largest f32 below 1: 2^16 - 2^-8, floored to 2^16 - 1, so every
  // 16-bit value but 0xFFFF is dropped.
  EXPECT_EQ(dropoutThreshold(0.99999994f), 0xFFFFu);
  EXPECT_FLOAT_EQ(dropoutScale(0.2f), 1.25f);
}

TEST(PhiloxTest, BitsAreSixteenBitsAndReachBothEnds) {
  std::uint32_t lowest = 0xFFFF, highest = 0;
  for (std::uint32_t query = 0; query < 256; ++query)
    for (std::uint32_t key = 0; key < 256; ++key) {
      std::uint32_t bits = dropoutBits(9, 2, {0, 1, 2, query, key});
      ASSERT_LE(bits, 0xFFFFu);
      lowest = std::min(lowest, bits);
      highest = std::max(highest, bits);
    }
  // 65536 draws: the extremes come within 16 of 0 and 2^16 - 1 unless
  // some bits are stuck.
  EXPECT_LT(lowest, 16u);
  EXPECT_GT(highest, 0xFFFFu - 16);
}

TEST(PhiloxTest, PZeroKeepsEverything) {
  for (std::uint32_t key = 0; key < 64; ++key)
    EXPECT_TRUE(dropoutKeep(11, 0, {0, 0, 1, 3, key}, 0.0f));
}

// Over 2^20 positions of a fixed seed (a deterministic test), the kept
// fraction is within 0.5% of 1 - threshold / 2^16 (which is within 2^-16 of
// 1 - p). The binomial standard deviation at p = 0.5 is 0.05%, so 0.5% is
// ten deviations: a correct generator never fails, while a wrong threshold
// rule (e.g. keeping below the threshold, or one value reused for a block)
// does.
TEST(PhiloxTest, KeepFractionIsOneMinusP) {
  constexpr std::uint32_t kQueries = 1024, kKeys = 1024;
  for (float p : {0.1f, 0.5f}) {
    std::uint64_t kept = 0;
    for (std::uint32_t query = 0; query < kQueries; ++query)
      for (std::uint32_t key = 0; key < kKeys; ++key)
        kept += dropoutKeep(0x5eed, 1, {1, 2, 4, query, key}, p);
    double fraction = static_cast<double>(kept) / (kQueries * kKeys);
    EXPECT_NEAR(fraction, 1.0 - dropoutThreshold(p) / 65536.0, 0.005)
        << "p = " << p;
    EXPECT_NEAR(fraction, 1.0 - p, 0.005) << "p = " << p;
  }
}

} // namespace
} // namespace fa
