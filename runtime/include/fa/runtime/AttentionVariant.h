//===- AttentionVariant.h - Masks and scores of attention -------*- C++ -*-===//
//
// The attention variants of issue 20, as the runtime runs and checks them.
// Shapes as AttentionShape.h; off = seq_kv - seq_q; s_ij = scale * q_i . k_j.
//
// Mask: query row i of (b, h) keeps key j when every present condition does:
//   causal top-left       j <= i               (the kernels' "causal": true)
//   causal bottom-right   j <= i + off         (FlashAttention's alignment)
//   window(L, R)          i + off - L <= j <= i + off + R      (L, R >= 0)
//   document(ids)         ids[b, i] == ids[b, j]  (ids int32 [B, S], S =
//                         seq_q = seq_kv, each row non-decreasing: kernels
//                         skip tiles by it, so it is checked)
//   custom                a dense mask, nonzero = keep, [Sq, Skv] or
//                         [B, H, Sq, Skv]: the reference of a user's region
// Score of a kept element, softcap first, then ALiBi:
//   softcap(c > 0)        s' = c * tanh(s / c)
//   alibi(slopes f32 [H]) s' = s - slopes[h] * |i + off - j|
// Then P = softmax over the kept j of s', out = P V, lse_i = log sum_j
// exp(s'_ij). A row that keeps no key has out = 0 and lse = -inf.
// Backward: dS_ij = P_ij (dP_ij - delta_i) * ds'/ds, with softcap's
// ds'/ds = 1 - tanh^2(s / c) and ALiBi's 1.
//
// Attention sinks (sinks f32 [H], GPT-OSS): a per-head logit that joins
// every row's softmax denominator as a key with no value:
//   lse_i = log(exp(sinks[h]) + sum_j exp(s'_ij)),  P_ij = exp(s'_ij - lse_i)
// so a row's P sums to 1 - exp(sinks[h] - lse_i); a row that keeps no key
// has out = 0 and lse = sinks[h]. The backward is unchanged given this lse,
// and the sinks' gradient is
//   dsinks[h] = -sum_{b,i} exp(sinks[h] - lse[b,h,i]) * delta[b,h,i].
// Dropout (p, seed, offset): Z_ij = keep(seed, offset, b, h, i, j) / (1 - p),
// Philox.h's mask (H the query heads), multiplies P after the softmax:
//   out_i = sum_j P_ij Z_ij v_j   (lse is the undropped softmax's)
//   dV_j = sum_i P_ij Z_ij dO_i,  dP_ij = Z_ij (dO_i . v_j),
//   delta_i = dO_i . out_i,       dS_ij = P_ij (dP_ij - delta_i) * ds'/ds.
//
// Kernels name their variant in the manifest (KernelLibrary.h): the named
// variants present, '+'-joined in the order causal_bottom_right, window,
// document, softcap, alibi, sinks, dropout ("window+softcap",
// "window+sinks"); top-left causal stays the kernel's "causal" flag and
// combines with any of them. A user's kernel has the name the user gave
// (default "custom"). The variant's values reach the kernels as parameters
// bound by name: window_left, window_right (i64), softcap (f32),
// alibi_slopes (memref f32 [H]), doc_ids (memref i32 [B, S]), sinks (memref
// f32 [H]), dropout_p (f32), dropout_seed (i64, the u64 seed's bits),
// dropout_offset (i32, the u32 offset's bits), and a user's captures under
// their names. The sinks' backward adds a kernel (Attention.h) that writes
// dsinks (memref f32 [H]).
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_ATTENTIONVARIANT_H
#define FA_RUNTIME_ATTENTIONVARIANT_H

#include "fa/runtime/AttentionShape.h"
#include "fa/runtime/DeviceBuffer.h"
#include "fa/runtime/KernelArgs.h"
#include "fa/runtime/KernelLibrary.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fa {

enum class CausalAlignment { None, TopLeft, BottomRight };

/// "none", "top-left" or "bottom-right".
const char *causalAlignmentName(CausalAlignment alignment);

struct AttentionWindow {
  std::int64_t left = 0;
  std::int64_t right = 0;
};

/// The named variants in the order their names are joined.
inline constexpr const char *kNamedVariants[] = {"causal_bottom_right",
                                                 "window",
                                                 "document",
                                                 "softcap",
                                                 "alibi",
                                                 "sinks",
                                                 "dropout"};

/// Whether `name` is '+'-joined named variants (then the runtime knows its
/// semantics); otherwise it is a user's variant.
bool isNamedVariant(const std::string &name);

/// Which named variants a problem has (top-left causal is the kernels'
/// `causal` flag, not a named variant).
struct NamedVariantSet {
  bool causalBottomRight = false;
  bool window = false;
  bool document = false;
  bool softcap = false;
  bool alibi = false;
  bool sinks = false;
  bool dropout = false;
};

/// The named variants present, '+'-joined in kNamedVariants' order
/// ("window+softcap"); "" if none: the kernels' "variant".
std::string namedVariantName(const NamedVariantSet &present);

/// Attention dropout's values (Philox.h's mask).
struct AttentionDropout {
  float p = 0; // 0 <= p < 1, as the kernels take it (f32).
  std::uint64_t seed = 0;
  std::uint32_t offset = 0;
};

struct AttentionVariant {
  CausalAlignment causal = CausalAlignment::None;
  std::optional<AttentionWindow> window;
  /// The cap as the kernel takes it (f32).
  std::optional<float> softcap;
  std::vector<float> alibiSlopes;   // [heads]; empty: no ALiBi.
  std::vector<std::int32_t> docIds; // [batch, seq]; empty: no documents.
  /// Where the ids came from, for reports ("lengths 300,1000", a file).
  std::string documentSource;
  std::vector<float> sinks; // [heads]; empty: no sinks.
  /// Where the sinks came from, for reports ("random, seed 0", a file).
  std::string sinksSource;
  std::optional<AttentionDropout> dropout;
  /// A user's variant (the kernel's "variant"); empty for named variants.
  std::string customName;
  /// The reference mask of a user's variant, nonzero = keep: [Sq, Skv] or
  /// [B, H, Sq, Skv] (maskShape); empty: none.
  std::vector<std::uint8_t> mask;
  Shape maskShape;
  /// A user's captures, NAME -> the text after '=' in --param NAME=VALUE:
  /// a number, or a .npy file for a tensor.
  std::map<std::string, std::string> params;

  /// The named variants present, '+'-joined ("window+softcap"); "" if none.
  std::string namedName() const;
  /// The kernel variant to run: customName if set, else namedName().
  std::string name() const;
  /// A user's variant: the runtime cannot know its semantics beyond the
  /// named conditions and `mask`.
  bool custom() const { return !customName.empty(); }

  /// Throws, naming the problem, unless the values fit `shape`: window
  /// bounds >= 0, softcap > 0 and finite, one slope per head, doc ids
  /// [batch, seq] with seq_q == seq_kv and each row non-decreasing, the
  /// mask [Sq, Skv] or [B, H, Sq, Skv], one finite sink per head, dropout
  /// 0 <= p < 1.
  void validate(const AttentionShape &shape) const;

  /// Whether query row i of (b, h) keeps key j.
  bool keeps(const AttentionShape &shape, std::int64_t b, std::int64_t h,
             std::int64_t i, std::int64_t j) const;
  /// The kept (i, j) pairs summed over every (b, h), exactly (validates).
  std::int64_t keptPairs(const AttentionShape &shape) const;
  /// 4 * D * keptPairs: the forward's useful FLOPs, as FlexAttention counts
  /// them; the backward's are 2.5 times that.
  double flops(const AttentionShape &shape) const;

  /// The values, for reports, in the order of the name: "causal=bottom-right
  /// window=(256, 0) documents=lengths 1000 softcap=30 alibi sinks=random,
  /// seed 0 dropout=(p 0.1, seed 0, offset 0) mask=[128, 128] prefix=64";
  /// "none" for plain attention.
  std::string describe() const;
};

/// ALiBi's slopes for `heads` heads: 2^(-8 (h + 1) / heads), the ALiBi
/// paper's geometric sequence.
std::vector<float> alibiSlopes(std::int64_t heads);

/// fa-run's --sinks: one logit per head, ln(seq_kv) + N(0, 1), drawn from
/// `seed` (mt19937_64, Box-Muller: the same on every platform). The ln(seq_kv)
/// gives the sink a share of a full row's softmax comparable to its keys'
/// (random normal inputs give scores of about N(0, 1)), so that out, lse and
/// dsinks all depend on it measurably.
std::vector<float> randomSinks(std::int64_t heads, std::int64_t seqKv,
                               std::uint64_t seed);

/// Doc ids [batch, seq] for documents of `lengths` in order, repeated until
/// the sequence is covered, the last one cut; the same for every batch row.
/// Throws unless every length is positive.
std::vector<std::int32_t>
documentIdsFromLengths(const std::vector<std::int64_t> &lengths,
                       std::int64_t batch, std::int64_t seq);

/// Throws, naming the first bad position ("doc ids [b, i]"), unless `ids`
/// has batch * seq elements and each batch row is non-decreasing.
void checkDocumentIds(const std::vector<std::int32_t> &ids, std::int64_t batch,
                      std::int64_t seq);

/// Kernel parameters of the attention kernels themselves (q, k, v, out,
/// lse, and the backward's dout, delta, dq, dk, dv, dsinks) and the
/// launches' own tile_counter, dq_accum and dq_semaphores, which no variant
/// binds.
bool isAttentionTensorParam(const std::string &name);

/// A variant's values as host data for the kernels `kernels` (a forward,
/// and a backward's three): scalars as ArgValues, tensors as bytes. Built
/// without a GPU, so that every mistake in --param values fails before one
/// is touched.
struct VariantParams {
  struct Tensor {
    std::string name;
    ParamKind kind = ParamKind::Memref; // Memref (of dtype) or I32Memref.
    DType dtype = DType::F32;
    Shape shape;
    Bytes bytes;
  };
  ArgBindings scalars;
  std::vector<Tensor> tensors;
};

/// Throws, naming the kernel and parameter, when a kernel takes a parameter
/// that neither the variant nor --param gives, when the variant gives a
/// value that none of the kernels takes (a kernel compiled without it), when
/// a --param names none of the kernels' parameters (listing them), or when a
/// value does not parse as its parameter's kind.
VariantParams variantParams(const AttentionVariant &variant,
                            const AttentionShape &shape,
                            const std::vector<const KernelSpec *> &kernels);

/// A variant's values on the device, bound by name; owns the buffers of its
/// tensors (slopes, doc ids, a user's tensors).
class VariantArgs {
public:
  VariantArgs() = default;
  explicit VariantArgs(const VariantParams &params);

  /// The bindings to add to the attention tensors' (Attention.h).
  const ArgBindings &bindings() const { return values; }

private:
  std::vector<DeviceBuffer> buffers;
  ArgBindings values;
};

} // namespace fa

#endif // FA_RUNTIME_ATTENTIONVARIANT_H
