//===- KernelChoice.h - The kernel of a group for a problem -----*- C++ -*-===//
//
// A problem runs the kernel the tuning cache names for its group and
// key/value sequence class when the cache was tuned on this GPU and the
// kernel is still in the library; otherwise the group's default (the first
// kernel listed). A stale cache entry is worth a warning, not a failure: the
// default computes the same thing.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_KERNELCHOICE_H
#define FA_RUNTIME_KERNELCHOICE_H

#include "fa/runtime/KernelLibrary.h"
#include "fa/runtime/TuningCache.h"

#include <cstdint>
#include <string>

namespace fa {

enum class KernelSource { TuningCache, Default, Named };

struct KernelChoice {
  const KernelSpec *kernel = nullptr;
  KernelSource source = KernelSource::Default;
  /// Why, e.g. "tuning cache /k/tuning.json, seq_kv class <=4096" or
  /// "default: no tuning cache".
  std::string reason;
  /// Non-empty when a cache entry had to be ignored (one line, for stderr).
  std::string warning;
};

/// Throws, as KernelLibrary::find, when the group has no kernel. `cache` may
/// be null (no cache, or --no-tuning).
KernelChoice chooseKernel(const KernelLibrary &library,
                          const KernelQuery &query, std::int64_t seqKv,
                          const TuningCache *cache,
                          const std::string &deviceName);

/// The kernel called `name` (a user's `--kernel`), which must belong to the
/// group `query`: throws, naming the group's kernels, otherwise. For sweeping
/// a library's configurations one at a time.
KernelChoice chooseNamedKernel(const KernelLibrary &library,
                               const KernelQuery &query,
                               const std::string &name);

/// "tuning_cache", "default" or "named".
const char *kernelSourceName(KernelSource source);

} // namespace fa

#endif // FA_RUNTIME_KERNELCHOICE_H
