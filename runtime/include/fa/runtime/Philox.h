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
//   block     = philox4x32_10(
//                 counter = (8 (j / 32) + j mod 8,  8 (i / 16) + i mod 8,
//                            b * H + h,  offset),
//                 key     = (seed mod 2^32, seed / 2^32))
//   t         = 4 ((i / 8) mod 2) + (j / 8) mod 4          (0 <= t < 8)
//   bits      = (block[t / 2] >> (16 (t mod 2))) mod 2^16  (16 bits)
//   threshold = floor(p * 2^16), p the f32 value, 0 <= p < 1
//
// and multiplies kept values by scale(p) = 1.0f / (1.0f - p), in f32. The
// mask is a pure function of (seed, offset, b, h, i, j), independent of how
// a kernel tiles the scores: the forward and the backward (whose tiles
// differ) regenerate the same mask from (seed, offset). `seed` is 64 bits,
// the key; `offset` (32 bits) separates the masks drawn with one seed, e.g.
// one per training step and layer. Each (i, j) has its own 16 bits: the
// counter and t together give back i / 16, i mod 8, (i / 8) mod 2 and
// j / 32, j mod 8, (j / 8) mod 4.
//
// Why this layout: one Philox call (ten rounds of two 32 x 32 -> 64-bit
// products) yields 128 bits, here eight 16-bit values, the 2 x 4 elements
//   queries {i0, i0 + 8} x keys {k0, k0 + 8, k0 + 16, k0 + 24}
// (i0 mod 16 < 8, k0 mod 32 < 8). Those are elements one GPU lane holds in
// the mma/wgmma accumulator layout (lib/Conversion/FAToNVGPU/TileLayout.h),
// whichever way a tile is oriented: a lane holds rows r and r + 8 of each
// 16-row block and columns c, c + 1 of every 8-column block. A tile whose
// rows are queries and columns keys (the forward, the dQ kernel) gets eight
// of its elements from each call when its first row is a multiple of 16
// and its first column a multiple of 32 (four when only of 16); a tile
// whose rows are keys and columns queries (the dK/dV kernel's k @ q^T) gets
// four, keys r, r + 8 times queries c, c + 8 (its first row and column
// multiples of 16), eight when a lane's two row blocks share a 32-key group.
// The earlier mask, one 32-bit word for each of four consecutive keys of a
// row, served at most two of a lane's elements per call (a lane's keys come
// in pairs), one in transposed tiles: it made dropout's kernels
// Philox-bound, 2.3x slower than without dropout (H100, D = 128).
//
// Why an integer threshold rather than a uniform float compared with p: the
// comparison is exact (P(drop) = threshold / 2^16, within 2^-16 of p) and
// costs one unsigned compare per element, with no int-to-float conversion;
// the threshold itself is exact in f32 arithmetic, since p * 2^16 only
// changes the exponent. p = 0 drops nothing (threshold 0). 16 bits resolve
// p to 1/65536 (FlashAttention-2 draws 8).
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
/// seven other elements of its 2 x 4 group:
/// (8 (key / 32) + key mod 8, 8 (query / 16) + query mod 8, b * H + h, offset).
constexpr PhiloxCounter dropoutCounter(std::uint32_t offset,
                                       const DropoutPosition &position) {
  return {8 * (position.key / 32) + position.key % 8,
          8 * (position.query / 16) + position.query % 8,
          position.batch * position.heads + position.head, offset};
}

/// Which of its block's eight 16-bit values `position` takes:
/// t = 4 ((query / 8) mod 2) + (key / 8) mod 4, the low (t even) or high
/// half of word t / 2.
constexpr std::uint32_t dropoutSlot(const DropoutPosition &position) {
  return 4 * (position.query / 8 % 2) + position.key / 8 % 4;
}

/// The 16 random bits of `position` (0 to 2^16 - 1).
constexpr std::uint32_t dropoutBits(std::uint64_t seed, std::uint32_t offset,
                                    const DropoutPosition &position) {
  std::uint32_t slot = dropoutSlot(position);
  std::uint32_t word = philox4x32_10(dropoutCounter(offset, position),
                                     dropoutKey(seed))[slot / 2];
  return (word >> (16 * (slot % 2))) & 0xFFFFu;
}

/// floor(p * 2^16) for 0 <= p < 1 (p as f32, as the kernels receive it):
/// bits below it are dropped.
inline std::uint32_t dropoutThreshold(float p) {
  return static_cast<std::uint32_t>(std::floor(p * 65536.0f));
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
