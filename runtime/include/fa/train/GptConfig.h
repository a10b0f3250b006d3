//===- GptConfig.h - The GPT model's sizes and parameter layout -*- C++ -*-===//
//
// A GPT-2-style decoder over tokens: bytes (vocab 256), or a tokenizer's ids
// (fa-run train's --vocab; no kernel assumes 256). With C = d_model,
// H = heads, D = C / H, F = 4C, T = seq, V = vocab, the forward of tokens
// [B, T] is:
//
//   x = wte[token] + wpe[t]                                   [B, T, C]
//   per layer:
//     h    = LayerNorm(x; ln1_w, ln1_b)          (eps kLayerNormEps)
//     qkv  = h qkv_w^T + qkv_b                                [B, T, 3C]
//            q[b,t,h,d] = qkv[b,t,h*D+d], k at C + h*D+d, v at 2C + h*D+d
//     y    = causal softmax(q k^T / sqrt(D)) v, heads merged  [B, T, C]
//     x    = x + y proj_w^T + proj_b
//     h    = LayerNorm(x; ln2_w, ln2_b)
//     u    = h fc_w^T + fc_b                                  [B, T, F]
//     x    = x + gelu(u) fc_proj_w^T + fc_proj_b
//     gelu(u) = 0.5 u (1 + tanh(sqrt(2/pi) (u + 0.044715 u^3)))
//   h      = LayerNorm(x; lnf_w, lnf_b)
//   logits = h head^T, head = wte when tied, else lm_head_w   [B, T, V]
//   loss   = mean over the B*T positions of -log softmax(logits)[target]
//
// Matrices are row-major [out, in] (PyTorch's nn.Linear). All parameters live
// in one flat f32 array in the order of ParameterLayout, so the optimizer,
// the gradient all-reduce and checkpoints each see one buffer.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRAIN_GPTCONFIG_H
#define FA_TRAIN_GPTCONFIG_H

#include <cstdint>
#include <string>
#include <vector>

namespace fa::train {

constexpr std::int64_t kByteVocab = 256;
constexpr double kLayerNormEps = 1e-5;
/// GPT-2's initialisation: N(0, kInitStd) for matrices and embeddings, the
/// residual projections (proj_w, fc_proj_w) scaled by 1/sqrt(2 * layers).
constexpr double kInitStd = 0.02;

struct GptConfig {
  std::int64_t layers = 6;
  std::int64_t dModel = 384;
  std::int64_t heads = 6;
  std::int64_t seq = 256; // T, also the size of the position table.
  std::int64_t vocab = kByteVocab;
  bool tiedHead = true;

  std::int64_t headDim() const { return dModel / heads; }
  std::int64_t mlpHidden() const { return 4 * dModel; }
  /// Throws fa::Error naming the bad size: every size positive, heads
  /// dividing d_model.
  void validate() const;
  /// "layers=6 d_model=384 heads=6 seq=256 vocab=256 tied".
  std::string describe() const;
};

/// How a parameter is initialised (see kInitStd).
enum class ParameterInit { Normal, ResidualNormal, Zeros, Ones };

/// One parameter tensor: a named range of the flat parameter array.
struct ParameterTensor {
  std::string name; // "wte", "layer3.qkv_w", "lnf_b", ...
  std::vector<std::int64_t> shape;
  std::int64_t offset = 0; // In elements, from the start of the flat array.
  std::int64_t size = 0;   // Product of shape.
  ParameterInit init = ParameterInit::Normal;
  /// AdamW's weight decay applies to matrices and embeddings (rank 2) only.
  bool decayed() const { return shape.size() == 2; }
};

/// Offsets of every parameter tensor of one layer, in elements (indices into
/// ParameterLayout::tensors() are fixed by this order).
struct LayerParameters {
  std::int64_t ln1W, ln1B, qkvW, qkvB, projW, projB;
  std::int64_t ln2W, ln2B, fcW, fcB, fcProjW, fcProjB;
};

/// The flat layout: wte [V, C], wpe [T, C]; per layer ln1_w [C], ln1_b [C],
/// qkv_w [3C, C], qkv_b [3C], proj_w [C, C], proj_b [C], ln2_w [C],
/// ln2_b [C], fc_w [F, C], fc_b [F], fc_proj_w [C, F], fc_proj_b [C]; then
/// lnf_w [C], lnf_b [C]; then lm_head_w [V, C] unless tied. Every offset is
/// a multiple of kParameterAlignment elements, so each tensor starts 16-byte
/// aligned in f32 and bf16 copies of the array (padding is zero).
class ParameterLayout {
public:
  static constexpr std::int64_t kParameterAlignment = 8;

  explicit ParameterLayout(const GptConfig &config);

  const std::vector<ParameterTensor> &tensors() const { return entries; }
  /// Elements of the flat array, padding included.
  std::int64_t totalSize() const { return total; }
  /// Parameters proper, padding excluded.
  std::int64_t parameterCount() const;

  const ParameterTensor &wte() const { return entries[0]; }
  const ParameterTensor &wpe() const { return entries[1]; }
  const LayerParameters &layer(std::int64_t index) const {
    return layerOffsets[index];
  }
  std::int64_t lnfW() const { return lnfWOffset; }
  std::int64_t lnfB() const { return lnfBOffset; }
  /// lm_head_w's offset, or wte's when the head is tied.
  std::int64_t head() const { return headOffset; }
  /// Throws fa::Error for an unknown name.
  const ParameterTensor &find(const std::string &name) const;

private:
  std::vector<ParameterTensor> entries;
  std::vector<LayerParameters> layerOffsets;
  std::int64_t lnfWOffset = 0, lnfBOffset = 0, headOffset = 0;
  std::int64_t total = 0;
};

/// The flat f32 parameters initialised as GPT-2 does, from `seed` alone
/// (padding zero).
std::vector<float> initialParameters(const ParameterLayout &layout,
                                     const GptConfig &config,
                                     std::uint64_t seed);

} // namespace fa::train

#endif // FA_TRAIN_GPTCONFIG_H
