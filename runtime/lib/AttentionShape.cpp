//===- AttentionShape.cpp -------------------------------------------------===//

#include "fa/runtime/AttentionShape.h"

#include "fa/runtime/Error.h"

namespace fa {

void AttentionShape::validate() const {
  const std::pair<const char *, std::int64_t> sizes[] = {
      {"batch", batch}, {"heads", heads},  {"kv_heads", kvHeads},
      {"seq_q", seqQ},  {"seq_kv", seqKv}, {"head_dim", headDim}};
  for (const auto &[name, size] : sizes)
    if (size < 1)
      throw Error("attention shape " + describe() + ": " + name +
                  " must be positive");
  if (heads % kvHeads != 0)
    throw Error("attention shape " + describe() + ": heads (" +
                std::to_string(heads) + ") must be a multiple of kv_heads (" +
                std::to_string(kvHeads) + ")");
}

double AttentionShape::flops(bool causal) const {
  double full = 4.0 * static_cast<double>(batch) * static_cast<double>(heads) *
                static_cast<double>(seqQ) * static_cast<double>(seqKv) *
                static_cast<double>(headDim);
  return causal ? full / 2 : full;
}

double AttentionShape::backwardFlops(bool causal) const {
  return 2.5 * flops(causal);
}

std::string AttentionShape::describe() const {
  return "batch=" + std::to_string(batch) + " heads=" + std::to_string(heads) +
         " kv_heads=" + std::to_string(kvHeads) +
         " seq_q=" + std::to_string(seqQ) + " seq_kv=" + std::to_string(seqKv) +
         " head_dim=" + std::to_string(headDim);
}

} // namespace fa
