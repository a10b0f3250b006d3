//===- Attention.cpp ------------------------------------------------------===//

#include "fa/runtime/Attention.h"

#include "fa/runtime/Error.h"

#include <limits>

namespace fa {
namespace {

const KernelSpec &checkedAttentionSpec(const Kernel &kernel,
                                       const AttentionShape &shape) {
  const KernelSpec &spec = kernel.spec();
  shape.validate();
  if (spec.op != "attention_fwd")
    throw Error("kernel " + spec.name + " computes " + spec.op +
                ", not attention_fwd");
  if (spec.headDim != shape.headDim)
    throw Error("kernel " + spec.name + " is compiled for head_dim " +
                std::to_string(spec.headDim) + ", but the problem has " +
                std::to_string(shape.headDim));
  return spec;
}

/// CUDA's limits on a grid's x and on its y and z dimensions.
constexpr std::int64_t kMaxGridX = std::numeric_limits<int>::max();
constexpr std::int64_t kMaxGridYZ = 65535;

unsigned gridExtent(const GridExtent &extent, const KernelSpec &spec,
                    const AttentionShape &shape, std::int64_t limit) {
  if (extent.symbol.empty())
    return extent.count;
  std::int64_t value = 1;
  if (extent.symbol == "query_tiles")
    value = (shape.seqQ + spec.blockM - 1) / spec.blockM;
  else if (extent.symbol == "batch_heads")
    value = shape.batch * shape.heads;
  else if (extent.symbol != "one")
    throw Error("kernel " + spec.name + ": unknown grid symbol '" +
                extent.symbol + "'");
  if (value > limit)
    throw Error("kernel " + spec.name + ": grid dimension " + extent.symbol +
                " = " + std::to_string(value) + " exceeds CUDA's limit of " +
                std::to_string(limit) + " for that dimension");
  return static_cast<unsigned>(value);
}

} // namespace

Dim3 attentionGrid(const KernelSpec &spec, const AttentionShape &shape) {
  return {gridExtent(spec.grid[0], spec, shape, kMaxGridX),
          gridExtent(spec.grid[1], spec, shape, kMaxGridYZ),
          gridExtent(spec.grid[2], spec, shape, kMaxGridYZ)};
}

ArgBindings attentionBindings(DType dtype, const AttentionShape &shape,
                              const AttentionBuffers &buffers) {
  return {{"q", MemrefArg{buffers.q, dtype, shape.query()}},
          {"k", MemrefArg{buffers.k, dtype, shape.keyValue()}},
          {"v", MemrefArg{buffers.v, dtype, shape.keyValue()}},
          {"out", MemrefArg{buffers.out, dtype, shape.query()}},
          {"lse", MemrefArg{buffers.lse, DType::F32, shape.logSumExp()}}};
}

AttentionLaunch::AttentionLaunch(const Kernel &kernel,
                                 const AttentionShape &shape,
                                 const AttentionBuffers &buffers)
    : kernel(kernel),
      grid(attentionGrid(checkedAttentionSpec(kernel, shape), shape)),
      args(kernel.spec(),
           attentionBindings(kernel.spec().dtype, shape, buffers)) {}

void AttentionLaunch::enqueue(const Stream &stream) {
  kernel.launch(grid, args, stream.get());
}

} // namespace fa
