//===- Dropout.h - Where the GPT model drops what, and with which bits -*- C++
//-*-===//
//
// Dropout as nanoGPT places it, with probability p, in training forwards
// only (evaluation drops nothing):
//   x = drop(wte[token] + wpe[t])                      the embeddings' sum
//   P = drop(softmax(q k^T / sqrt(D)))                 attention (Philox.h)
//   x = x + drop(y proj_w^T + proj_b)                  the attention branch
//   x = x + drop(gelu(u) fc_proj_w^T + fc_proj_b)      the MLP branch
// A dropped element is 0, a kept one is scaled by dropoutScale(p) = 1/(1-p);
// elements are dropped when their 16 random bits are below
// dropoutThreshold(p) (Philox.h), so attention and activations agree on p.
//
// Every mask is a pure function of (seed, step, where), never stored: the
// backward regenerates it, a resumed run redraws the same masks, and the
// CPU reference (CpuGpt.h) draws them too.
//  - Attention of layer l in step s: Philox.h's mask with `seed` and offset
//    attentionDropoutOffset(s, layers, l) = s * layers + l (mod 2^32).
//  - Activations: element n (row-major index) of the tensor dropped at site
//    `site` in step s takes 16-bit value n mod 8 (word (n mod 8) / 2, low
//    half first) of
//      philox4x32_10(counter = (n / 8 mod 2^32, n / 2^35, site, s),
//                    key = activationDropoutKey(seed))
//    so one Philox call serves eight consecutive elements (one 16-byte chunk
//    of bf16). Sites: 0 the embeddings, 1 + 2 l layer l's attention branch,
//    2 + 2 l its MLP branch. The key is the seed's with its high word
//    flipped by kActivationKeyTweak: these counters may equal attention's,
//    and another key makes the two families of masks independent.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRAIN_DROPOUT_H
#define FA_TRAIN_DROPOUT_H

#include "fa/runtime/Philox.h"

#include <cstdint>

namespace fa::train {

/// The masks of one training forward: probability p (0 <= p < 1), the
/// run's seed and the step.
struct DropoutDraw {
  float p = 0;
  std::uint64_t seed = 0;
  std::uint32_t step = 0;
};

inline constexpr std::uint32_t kActivationKeyTweak = 0xA5C3D2E1u;

/// The Philox key of the activation masks drawn from `seed`.
constexpr PhiloxKey activationDropoutKey(std::uint64_t seed) {
  return {static_cast<std::uint32_t>(seed),
          static_cast<std::uint32_t>(seed >> 32) ^ kActivationKeyTweak};
}

/// Sites of the activation masks.
constexpr std::uint32_t embeddingDropoutSite() { return 0; }
constexpr std::uint32_t attentionBranchDropoutSite(std::int64_t layer) {
  return static_cast<std::uint32_t>(1 + 2 * layer);
}
constexpr std::uint32_t mlpBranchDropoutSite(std::int64_t layer) {
  return static_cast<std::uint32_t>(2 + 2 * layer);
}

/// The attention mask's offset (Philox.h) of `layer` in `step`.
constexpr std::uint32_t attentionDropoutOffset(std::uint32_t step,
                                               std::int64_t layers,
                                               std::int64_t layer) {
  return step * static_cast<std::uint32_t>(layers) +
         static_cast<std::uint32_t>(layer);
}

/// The Philox block holding the bits of elements 8 g .. 8 g + 7.
constexpr PhiloxCounter activationDropoutBlock(std::uint64_t seed,
                                               std::uint32_t site,
                                               std::uint32_t step,
                                               std::uint64_t group) {
  return philox4x32_10({static_cast<std::uint32_t>(group),
                        static_cast<std::uint32_t>(group >> 32), site, step},
                       activationDropoutKey(seed));
}

/// Element `lane` (0..7) of a block's eight 16-bit values.
constexpr std::uint32_t activationDropoutBits(const PhiloxCounter &block,
                                              int lane) {
  return (block[lane / 2] >> (16 * (lane % 2))) & 0xFFFFu;
}

/// What element `n` of the tensor at `site` is multiplied by: 0 or
/// dropoutScale(p).
inline float activationDropoutFactor(const DropoutDraw &draw,
                                     std::uint32_t site, std::uint64_t n) {
  const PhiloxCounter block =
      activationDropoutBlock(draw.seed, site, draw.step, n / 8);
  return activationDropoutBits(block, static_cast<int>(n % 8)) >=
                 dropoutThreshold(draw.p)
             ? dropoutScale(draw.p)
             : 0.0f;
}

} // namespace fa::train

#endif // FA_TRAIN_DROPOUT_H
