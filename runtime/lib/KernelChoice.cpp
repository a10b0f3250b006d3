//===- KernelChoice.cpp ---------------------------------------------------===//

#include "fa/runtime/KernelChoice.h"

#include "fa/runtime/Error.h"

namespace fa {
namespace {

KernelChoice groupDefault(const KernelSpec &kernel, std::string reason,
                          std::string warning = "") {
  return {&kernel, KernelSource::Default, "default: " + reason,
          std::move(warning)};
}

} // namespace

KernelChoice chooseKernel(const KernelLibrary &library,
                          const KernelQuery &query, std::int64_t seqKv,
                          const TuningCache *cache,
                          const std::string &deviceName) {
  const KernelSpec &fallback = library.find(query);
  if (!cache)
    return groupDefault(fallback, "no tuning cache");
  std::string where = "tuning cache " + cache->path;
  if (cache->device != deviceName)
    return groupDefault(fallback, where + " is for " + cache->device +
                                      ", not " + deviceName);
  std::string seqClass = seqClassOf(seqKv).name;
  const TuningEntry *entry = cache->find(query, seqClass);
  if (!entry)
    return groupDefault(fallback,
                        where + " has no entry for seq_kv class " + seqClass);
  const KernelSpec *tuned = library.named(entry->kernel);
  if (tuned && query.matches(*tuned))
    return {tuned, KernelSource::TuningCache,
            where + ", seq_kv class " + seqClass, ""};
  // A kernel of another group (one taking views for a contiguous query, say)
  // is as unusable as a missing one.
  std::string stale = where + ": the entry for " + query.describe() +
                      ", seq_kv class " + seqClass + " names kernel " +
                      entry->kernel +
                      (tuned ? ", which computes " + tuned->describe()
                             : std::string(", which the library does not "
                                           "have")) +
                      " (stale cache); using the default " + fallback.name;
  return groupDefault(fallback, "stale entry in " + where, stale);
}

KernelChoice chooseNamedKernel(const KernelLibrary &library,
                               const KernelQuery &query,
                               const std::string &name) {
  const KernelSpec *kernel = library.named(name);
  if (kernel && query.matches(*kernel))
    return {kernel, KernelSource::Named, "named on the command line", ""};
  std::string group;
  for (const KernelSpec *candidate : library.candidates(query))
    group += "\n  " + candidate->name;
  std::string problem = kernel ? "kernel " + name + " computes " +
                                     kernel->describe() + ", not " +
                                     query.describe()
                               : "no kernel named " + name + " in the library";
  throw Error(problem + "; the kernels of " + query.describe() +
              " are:" + (group.empty() ? std::string(" none") : group));
}

const char *kernelSourceName(KernelSource source) {
  switch (source) {
  case KernelSource::TuningCache:
    return "tuning_cache";
  case KernelSource::Named:
    return "named";
  case KernelSource::Default:
    break;
  }
  return "default";
}

} // namespace fa
