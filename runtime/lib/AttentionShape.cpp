//===- AttentionShape.cpp -------------------------------------------------===//

#include "fa/runtime/AttentionShape.h"

#include "fa/runtime/CheckedMath.h"
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
  // Every tensor's size in the widest element type, and the two f32 score
  // matrices B*H*N*M that memory reports count, must fit in 64 bits.
  for (const Shape &tensor : {query(), keyValue(), logSumExp()})
    tensorBytes(tensor, DType::F32);
  std::string what =
      "attention shape " + describe() + ": sizing the score matrices B*H*N*M";
  std::int64_t scores = 8;
  for (std::int64_t extent : {batch, heads, seqQ, seqKv})
    scores = checkedMultiply(scores, extent, what);
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

AttentionMemory attentionMemory(const AttentionShape &shape, DType dtype,
                                bool backward) {
  // The backward doubles each count: P and dP; q, k, v, out and dout, dq,
  // dk, dv; lse and delta.
  int sets = backward ? 2 : 1;
  auto element = static_cast<std::int64_t>(dtypeBytes(dtype));
  AttentionMemory memory;
  memory.matrices = sets;
  memory.matrixElements =
      elementCount({shape.batch, shape.heads, shape.seqQ, shape.seqKv});
  memory.matricesBytesF32 = sets * memory.matrixElements * 4;
  memory.matricesBytesElement = sets * memory.matrixElements * element;
  memory.keptBytes = sets * elementCount(shape.logSumExp()) * 4;
  memory.tensorBytes =
      sets * 2 *
      (elementCount(shape.query()) + elementCount(shape.keyValue())) * element;
  return memory;
}

} // namespace fa
