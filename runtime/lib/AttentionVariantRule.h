//===- AttentionVariantRule.h - A variant's mask and score ------*- C++ -*-===//
//
// The one definition of which (i, j) a variant keeps and how it changes the
// score, shared by the CPU reference (Reference.cpp, host pointers) and the
// GPU reference (AttentionReference.cu, device pointers), so that the two
// cannot drift apart. AttentionVariant.h states the semantics; this is them
// as a plain struct of sizes and pointers that a kernel takes by value.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_LIB_ATTENTIONVARIANTRULE_H
#define FA_RUNTIME_LIB_ATTENTIONVARIANTRULE_H

#ifdef __CUDACC__
#define FA_HOST_DEVICE __host__ __device__
#else
#define FA_HOST_DEVICE
#include <cmath>
#endif

// The dropout mask's one definition (constexpr, so device code may call it:
// AttentionReference.cu is compiled with --expt-relaxed-constexpr).
#include "fa/runtime/Philox.h"

/// Causal alignments, as AttentionVariantRule::causal holds them.
enum : int {
  kRuleNoCausal = 0,
  kRuleTopLeftCausal = 1,
  kRuleBottomRightCausal = 2,
};

struct AttentionVariantRule {
  long long heads;
  long long seqQ;
  long long seqKv;
  int causal; // kRule*Causal.
  int hasWindow;
  long long windowLeft;
  long long windowRight;
  double softcap;            // 0: none.
  const float *alibiSlopes;  // [heads], or null.
  const int *docIds;         // [batch, seq] (seq_q == seq_kv), or null.
  const unsigned char *mask; // Nonzero keeps; or null.
  int maskPerHead;           // mask is [B, H, Sq, Skv], else [Sq, Skv].
  const float *sinks;        // [heads] logits in every row's softmax, or null.
  int hasDropout;
  unsigned dropoutThreshold; // dropoutThreshold(p): lower bits are dropped.
  double dropoutScale;       // dropoutScale(p), the f32 1 / (1 - p).
  unsigned long long dropoutSeed;
  unsigned dropoutOffset;
};

/// seq_kv - seq_q: where query row i's diagonal lies (bottom-right).
FA_HOST_DEVICE inline long long ruleOffset(const AttentionVariantRule &rule) {
  return rule.seqKv - rule.seqQ;
}

/// The keys [first, end) that the causal and window conditions leave query
/// row i (within [0, seq_kv)); the other conditions are tested per key.
FA_HOST_DEVICE inline void ruleKeyRange(const AttentionVariantRule &rule,
                                        long long i, long long &first,
                                        long long &end) {
  const long long off = ruleOffset(rule);
  first = 0;
  end = rule.seqKv;
  auto clampEnd = [&](long long last) {
    if (last + 1 < end)
      end = last + 1;
  };
  if (rule.causal == kRuleTopLeftCausal)
    clampEnd(i);
  if (rule.causal == kRuleBottomRightCausal)
    clampEnd(i + off);
  if (rule.hasWindow) {
    clampEnd(i + off + rule.windowRight);
    if (i + off - rule.windowLeft > first)
      first = i + off - rule.windowLeft;
  }
  if (end < first)
    end = first;
}

/// The query rows [first, end) whose causal and window ranges hold key j:
/// ruleKeyRange's transpose, for sweeps over a key's queries.
FA_HOST_DEVICE inline void ruleQueryRange(const AttentionVariantRule &rule,
                                          long long j, long long &first,
                                          long long &end) {
  const long long off = ruleOffset(rule);
  first = 0;
  end = rule.seqQ;
  auto raiseFirst = [&](long long row) {
    if (row > first)
      first = row;
  };
  if (rule.causal == kRuleTopLeftCausal)
    raiseFirst(j);
  if (rule.causal == kRuleBottomRightCausal)
    raiseFirst(j - off);
  if (rule.hasWindow) {
    raiseFirst(j - off - rule.windowRight);
    if (j - off + rule.windowLeft + 1 < end)
      end = j - off + rule.windowLeft + 1;
  }
  if (end < first)
    end = first;
}

/// Whether query row i of (batch b, head h) keeps key j.
FA_HOST_DEVICE inline bool ruleKeeps(const AttentionVariantRule &rule,
                                     long long b, long long h, long long i,
                                     long long j) {
  long long first, end;
  ruleKeyRange(rule, i, first, end);
  if (j < first || j >= end)
    return false;
  if (rule.docIds &&
      rule.docIds[b * rule.seqQ + i] != rule.docIds[b * rule.seqKv + j])
    return false;
  if (rule.mask) {
    long long rows = rule.maskPerHead ? (b * rule.heads + h) * rule.seqQ : 0;
    if (!rule.mask[(rows + i) * rule.seqKv + j])
      return false;
  }
  return true;
}

/// The score a kept element enters the softmax with: softcap first, then
/// ALiBi (s is already scaled).
FA_HOST_DEVICE inline double ruleScore(const AttentionVariantRule &rule,
                                       double s, long long h, long long i,
                                       long long j) {
  if (rule.softcap > 0)
    s = rule.softcap * tanh(s / rule.softcap);
  if (rule.alibiSlopes)
    s -= static_cast<double>(rule.alibiSlopes[h]) *
         fabs(static_cast<double>(i + ruleOffset(rule) - j));
  return s;
}

/// d ruleScore / d s: softcap's 1 - tanh^2(s / c); ALiBi adds a constant.
FA_HOST_DEVICE inline double
ruleScoreDerivative(const AttentionVariantRule &rule, double s) {
  if (!(rule.softcap > 0))
    return 1;
  double t = tanh(s / rule.softcap);
  return 1 - t * t;
}

/// Z_ij, what dropout multiplies P_ij by in out and dV (and dP_ij by): 0
/// where Philox.h's mask drops (b, h, i, j), 1 / (1 - p) where it keeps, 1
/// without dropout. The softmax itself (lse) is the undropped one.
FA_HOST_DEVICE inline double ruleDropout(const AttentionVariantRule &rule,
                                         long long b, long long h, long long i,
                                         long long j) {
  if (!rule.hasDropout)
    return 1;
  const fa::DropoutPosition position{
      static_cast<unsigned>(b), static_cast<unsigned>(h),
      static_cast<unsigned>(rule.heads), static_cast<unsigned>(i),
      static_cast<unsigned>(j)};
  return fa::dropoutBits(rule.dropoutSeed, rule.dropoutOffset, position) >=
                 rule.dropoutThreshold
             ? rule.dropoutScale
             : 0.0;
}

#ifndef __CUDACC__
namespace fa {
struct AttentionShape;
struct AttentionVariant;
/// The rule of `variant` on `shape`, pointing into `variant`'s host vectors.
AttentionVariantRule hostVariantRule(const AttentionVariant &variant,
                                     const AttentionShape &shape);
} // namespace fa
#endif

#endif // FA_RUNTIME_LIB_ATTENTIONVARIANTRULE_H
