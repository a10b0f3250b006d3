//===- Attention.h - Launching attention kernels ----------------*- C++ -*-===//

#ifndef FA_RUNTIME_ATTENTION_H
#define FA_RUNTIME_ATTENTION_H

#include "fa/runtime/AttentionShape.h"
#include "fa/runtime/Kernel.h"
#include "fa/runtime/Stream.h"

namespace fa {

/// Device tensors of one attention problem, laid out as AttentionShape says.
struct AttentionBuffers {
  CUdeviceptr q = 0;
  CUdeviceptr k = 0;
  CUdeviceptr v = 0;
  CUdeviceptr out = 0;
  CUdeviceptr lse = 0;
};

/// The launch grid of `spec` for `shape`, its symbols resolved.
Dim3 attentionGrid(const KernelSpec &spec, const AttentionShape &shape);

/// The kernel arguments, by parameter name: memrefs q, k, v, out (the
/// kernel's dtype) and lse (f32).
ArgBindings attentionBindings(DType dtype, const AttentionShape &shape,
                              const AttentionBuffers &buffers);

/// An attention kernel bound to one problem and one set of buffers. Packing
/// happens once, so repeated launches (benchmarks) cost only the launch.
class AttentionLaunch {
public:
  /// Throws unless `kernel` is an attention_fwd kernel for this head_dim.
  AttentionLaunch(const Kernel &kernel, const AttentionShape &shape,
                  const AttentionBuffers &buffers);

  void enqueue(const Stream &stream);

private:
  const Kernel &kernel;
  Dim3 grid;
  KernelArgs args;
};

} // namespace fa

#endif // FA_RUNTIME_ATTENTION_H
