//===- Nccl.h - NCCL, bound at run time -------------------------*- C++ -*-===//
//
// Comm.cpp calls NCCL through this table, as the runtime calls the CUDA
// driver through Driver.h: fa-run links no NCCL, so it starts on machines
// without one (the GPU machines have only PyTorch's copy) and only a
// distributed run needs libnccl.so.2 on the library path.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRAIN_NCCL_H
#define FA_TRAIN_NCCL_H

#include <nccl.h>

#include <string>

namespace fa::train {

/// Every NCCL function Comm.cpp uses.
#define FA_NCCL_FUNCTIONS(X)                                                   \
  X(ncclGetVersion)                                                            \
  X(ncclGetUniqueId)                                                           \
  X(ncclCommInitRankConfig)                                                    \
  X(ncclCommGetAsyncError)                                                     \
  X(ncclCommFinalize)                                                          \
  X(ncclCommDestroy)                                                           \
  X(ncclCommAbort)                                                             \
  X(ncclGetErrorString)                                                        \
  X(ncclGetLastError)                                                          \
  X(ncclAllReduce)                                                             \
  X(ncclReduceScatter)                                                         \
  X(ncclAllGather)

struct NcclApi {
#define FA_NCCL_MEMBER(function) decltype(&::function) function = nullptr;
  FA_NCCL_FUNCTIONS(FA_NCCL_MEMBER)
#undef FA_NCCL_MEMBER
  int version = 0; // ncclGetVersion's code: 22809 for 2.28.9.
};

/// The oldest NCCL with everything above (ncclCommInitRankConfig and
/// non-blocking communicators, ncclCommFinalize).
constexpr int kOldestNcclVersion = 21400;

/// The name NCCL is looked for under, as dlopen searches for it.
constexpr const char *kNcclLibrary = "libnccl.so.2";

/// Loads `library` (a name dlopen searches for, or a path) and binds every
/// function; throws fa::Error naming the library when it is missing, lacks a
/// function or is older than kOldestNcclVersion.
NcclApi loadNcclApi(const std::string &library);

/// kNcclLibrary's table, loaded on first use; a failed load is retried on the
/// next call. Like driver(), it stands in for what the dynamic linker would
/// have bound and never changes once loaded.
const NcclApi &nccl();

} // namespace fa::train

#endif // FA_TRAIN_NCCL_H
