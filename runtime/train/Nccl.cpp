//===- Nccl.cpp - Binding libnccl at run time -----------------------------===//

#include "Nccl.h"

#include "fa/runtime/Error.h"

#include <dlfcn.h>

namespace fa::train {
namespace {

/// "2.28.9" for the code 22809 (NCCL_VERSION's encoding: X * 1000 + Y * 100
/// + Z up to 2.8, X * 10000 + Y * 100 + Z after).
std::string versionText(int code) {
  int major = code < 10000 ? code / 1000 : code / 10000;
  int minor = code < 10000 ? code / 100 % 10 : code / 100 % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(code % 100);
}

} // namespace

NcclApi loadNcclApi(const std::string &library) {
  // The handle is never closed: NCCL stays loaded for the process, and its
  // proxy threads may outlive any one communicator.
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    throw Error("loading NCCL (" + library +
                ") for a distributed run: " + dlerror() +
                "; put the directory holding libnccl.so.2 on LD_LIBRARY_PATH "
                "(PyTorch's is in site-packages/nvidia/nccl/lib)");
  NcclApi api;
#define FA_BIND_NCCL_FUNCTION(function)                                        \
  api.function =                                                               \
      reinterpret_cast<decltype(api.function)>(dlsym(handle, #function));      \
  if (!api.function)                                                           \
    throw Error("binding NCCL (" + library + "): it has no function " +        \
                #function + "; NCCL " + versionText(kOldestNcclVersion) +      \
                " or newer is needed");
  FA_NCCL_FUNCTIONS(FA_BIND_NCCL_FUNCTION)
#undef FA_BIND_NCCL_FUNCTION

  if (api.ncclGetVersion(&api.version) != ncclSuccess)
    throw Error("asking NCCL (" + library + ") for its version failed");
  if (api.version < kOldestNcclVersion)
    throw Error("NCCL (" + library + ") is version " +
                versionText(api.version) + "; " +
                versionText(kOldestNcclVersion) + " or newer is needed");
  return api;
}

const NcclApi &nccl() {
  // A throwing initialiser leaves it uninitialised; the next call retries.
  static const NcclApi api = loadNcclApi(kNcclLibrary);
  return api;
}

} // namespace fa::train
