//===- Attention.cpp ------------------------------------------------------===//

#include "fa/runtime/Attention.h"

#include "fa/runtime/Error.h"

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

} // namespace

Dim3 attentionGrid(const KernelSpec &spec, const AttentionShape &shape) {
  return resolveGrid(
      spec, {{"query_tiles", (shape.seqQ + spec.blockM - 1) / spec.blockM},
             {"batch_heads", shape.batch * shape.heads}});
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
