//===- Nvtx.h - Named ranges on profiler timelines --------------*- C++ -*-===//
//
// The phases of fa-run and of the runtime (loading the library and kernels,
// generating and uploading inputs, each pass, the fp64 reference, checking,
// timing) appear as named ranges in the "fa" domain of an Nsight Systems
// timeline (`nsys profile fa-run ...`). NVTX v3 is header-only: with no
// profiler attached a range costs a branch.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_NVTX_H
#define FA_RUNTIME_NVTX_H

#include <nvtx3/nvtx3.hpp>

namespace fa {

struct NvtxDomain {
  static constexpr const char *name{"fa"};
};

/// `NvtxRange range{"upload inputs"};` marks the rest of the scope.
using NvtxRange = nvtx3::scoped_range_in<NvtxDomain>;

} // namespace fa

#endif // FA_RUNTIME_NVTX_H
