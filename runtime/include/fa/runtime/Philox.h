//===- Philox.h - Philox-4x32-10 and the attention dropout mask -*- C++ -*-===//
//
// The CPU reference of the random numbers behind attention dropout, and the
// specification the kernels follow (the compiler's `fa.philox` op computes
// philox4x32_10 below, bit for bit).
//
// Philox-4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel Random Numbers: As
// Easy as 1, 2, 3", SC11): a keyed bijection of a 128-bit counter (four
// 32-bit words c0..c3) under a 64-bit key (k0, k1), ten rounds of
//   (hi0, lo0) = M0 * c0,  (hi1, lo1) = M1 * c2   (32 x 32 -> 64 bits)
//   c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)
// with the key bumped by (W0, W1) (mod 2^32) between rounds. Random123's
// known-answer vectors (kat_vectors) are its unit tests.
//
// The dropout mask. Attention dropout with probability p drops the
// probability P[b, h, i, j] (batch b, head h of H, query i, key j) when
//
//   bits(seed, offset, b, h, i, j) <  threshold(p), and keeps it otherwise,
//
//   bits      = word (j mod 4) of philox4x32_10(
//                 counter = (j / 4, i, b * H + h, offset),
//                 key     = (seed mod 2^32, seed / 2^32))
//   threshold = floor(p * 2^32), p the f32 value, 0 <= p < 1
//
// and multiplies kept values by scale(p) = 1.0f / (1.0f - p), in f32. So one
// Philox call gives four consecutive keys of one query row, and the mask is
// independent of how a kernel tiles the scores: the forward and the backward
// (whose tiles differ) regenerate the same mask from (seed, offset). `seed`
// is 64 bits, the key; `offset` (32 bits) separates the masks drawn with
// one seed, e.g. one per training step and layer.
//
// Why an integer threshold rather than a uniform float in (0, 1] compared
// with p: the comparison is exact (P(drop) = threshold / 2^32, within 2^-32
// of p) and costs one unsigned compare per element, with no int-to-float
// conversion; the threshold itself is exact in f32 arithmetic, since p * 2^32
// only changes the exponent. p = 0 drops nothing (threshold 0).
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_PHILOX_H
#define FA_RUNTIME_PHILOX_H

#include <array>
#include <cmath>
#include <cstdint>

namespace fa {

using PhiloxCounter = std::array<std::uint32_t, 4>;
using PhiloxKey = std::array<std::uint32_t, 2>;

/// The multipliers and key increments of Philox-4x32 (Random123's
/// PHILOX_M4x32_0/1 and PHILOX_W32_0/1).
inline constexpr std::uint32_t kPhiloxM0 = 0xD2511F53u;
inline constexpr std::uint32_t kPhiloxM1 = 0xCD9E8D57u;
inline constexpr std::uint32_t kPhiloxW0 = 0x9E3779B9u;
inline constexpr std::uint32_t kPhiloxW1 = 0xBB67AE85u;
inline constexpr int kPhiloxRounds = 10;

/// One Philox-4x32 round of `counter` under the round key `key`.
constexpr PhiloxCounter philoxRound(const PhiloxCounter &counter,
                                    const PhiloxKey &key) {
  std::uint64_t product0 = std::uint64_t{kPhiloxM0} * counter[0];
  std::uint64_t product1 = std::uint64_t{kPhiloxM1} * counter[2];
  auto high = [](std::uint64_t value) {
    return static_cast<std::uint32_t>(value >> 32);
  };
  auto low = [](std::uint64_t value) {
    return static_cast<std::uint32_t>(value);
  };
  return {high(product1) ^ counter[1] ^ key[0], low(product1),
          high(product0) ^ counter[3] ^ key[1], low(product0)};
}

/// Philox-4x32-10: ten rounds, the key bumped by (W0, W1) before each round
/// after the first.
constexpr PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key) {
  for (int round = 0; round < kPhiloxRounds; ++round) {
    if (round > 0)
      key = {key[0] + kPhiloxW0, key[1] + kPhiloxW1};
    counter = philoxRound(counter, key);
  }
  return counter;
}

/// Where one dropout mask bit lives: batch `batch`, head `head` of `heads`,
/// query `query`, key `key` (the score P[batch, head, query, key]).
struct DropoutPosition {
  std::uint32_t batch = 0;
  std::uint32_t head = 0;
  std::uint32_t heads = 1;
  std::uint32_t query = 0;
  std::uint32_t key = 0;
};

/// The Philox key of `seed`: its low word, then its high word.
constexpr PhiloxKey dropoutKey(std::uint64_t seed) {
  return {static_cast<std::uint32_t>(seed),
          static_cast<std::uint32_t>(seed >> 32)};
}

/// The counter whose Philox block holds the bits of `position` and of the
/// three other keys of its group of four: (key / 4, query, b * H + h, offset).
constexpr PhiloxCounter dropoutCounter(std::uint32_t offset,
                                       const DropoutPosition &position) {
  return {position.key / 4, position.query,
          position.batch * position.heads + position.head, offset};
}

/// The 32 random bits of `position` (word key mod 4 of its block).
constexpr std::uint32_t dropoutBits(std::uint64_t seed, std::uint32_t offset,
                                    const DropoutPosition &position) {
  return philox4x32_10(dropoutCounter(offset, position),
                       dropoutKey(seed))[position.key % 4];
}

/// floor(p * 2^32) for 0 <= p < 1 (p as f32, as the kernels receive it):
/// bits below it are dropped.
inline std::uint32_t dropoutThreshold(float p) {
  return static_cast<std::uint32_t>(std::floor(p * 4294967296.0f));
}

/// Whether the probability at `position` is kept under dropout probability
/// `p` (0 <= p < 1).
inline bool dropoutKeep(std::uint64_t seed, std::uint32_t offset,
                        const DropoutPosition &position, float p) {
  return dropoutBits(seed, offset, position) >= dropoutThreshold(p);
}

/// What kept probabilities are multiplied by: 1 / (1 - p), in f32.
inline float dropoutScale(float p) { return 1.0f / (1.0f - p); }

} // namespace fa

#endif // FA_RUNTIME_PHILOX_H
