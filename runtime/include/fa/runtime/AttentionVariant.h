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
// Kernels name their variant in the manifest (KernelLibrary.h): the named
// variants present, '+'-joined in the order causal_bottom_right, window,
// document, softcap, alibi ("window+softcap"); top-left causal stays the
// kernel's "causal" flag and combines with any of them. A user's kernel has
// the name the user gave (default "custom"). The variant's values reach the
// kernels as parameters bound by name: window_left, window_right (i64),
// softcap (f32), alibi_slopes (memref f32 [H]), doc_ids (memref i32 [B, S]),
// and a user's captures under their names.
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
inline constexpr const char *kNamedVariants[] = {
    "causal_bottom_right", "window", "document", "softcap", "alibi"};

/// Whether `name` is '+'-joined named variants (then the runtime knows its
/// semantics); otherwise it is a user's variant.
bool isNamedVariant(const std::string &name);

struct AttentionVariant {
  CausalAlignment causal = CausalAlignment::None;
  std::optional<AttentionWindow> window;
  /// The cap as the kernel takes it (f32).
  std::optional<float> softcap;
  std::vector<float> alibiSlopes;   // [heads]; empty: no ALiBi.
  std::vector<std::int32_t> docIds; // [batch, seq]; empty: no documents.
  /// Where the ids came from, for reports ("lengths 300,1000", a file).
  std::string documentSource;
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
  /// mask [Sq, Skv] or [B, H, Sq, Skv].
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
  /// window=(256, 0) documents=lengths 1000 softcap=30 alibi mask=[128, 128]
  /// prefix=64"; "none" for plain attention.
  std::string describe() const;
};

/// ALiBi's slopes for `heads` heads: 2^(-8 (h + 1) / heads), the ALiBi
/// paper's geometric sequence.
std::vector<float> alibiSlopes(std::int64_t heads);

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
/// lse, and the backward's dout, delta, dq, dk, dv), which no variant binds.
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
/// that neither the variant nor --param gives, when a --param names none of
/// the kernels' parameters (listing them), or when a value does not parse
/// as its parameter's kind.
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
