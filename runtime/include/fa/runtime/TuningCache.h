//===- TuningCache.h - Which kernel of a group is fastest -------*- C++ -*-===//
//
// `fa-run tune` times every kernel of each kernel-library group on one GPU,
// per sequence class, and records the fastest in a JSON file, by default
// <kernel dir>/tuning.json:
//
//   {"format": "fa-tuning-cache", "version": 1, "device": "NVIDIA H100 ...",
//    "entries": [{"op": "attention_fwd", "dtype": "bf16", "head_dim": 128,
//                 "causal": true, "seq_class": "<=4096",
//                 "kernel": "attention_fwd_bf16_d128_causal_m64n64w4",
//                 "tflops": 281.3,
//                 "candidates": {"attention_fwd_bf16_d128_causal_m64n64w4":
//                                281.3, ...}}]}
//
// An entry for a variant's group has "variant" too (absent: plain kernels),
// one for a group of kernels taking strided views "views": true (absent:
// contiguous kernels; KernelLibrary.h).
// "device" is the GPU's name as the driver reports it: timings from another
// GPU say nothing about this one. Parsing needs no GPU.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_TUNINGCACHE_H
#define FA_RUNTIME_TUNINGCACHE_H

#include "fa/runtime/KernelLibrary.h"

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fa {

/// Problems are tuned per class of key/value sequence length: the best tile
/// configuration changes with how many key tiles each query tile walks.
struct SeqClass {
  const char *name;
  std::int64_t maxSeqKv; // Inclusive.
  /// The sequence length `fa-run tune` times the class on.
  std::int64_t tuningSeq;
};

/// In increasing order; the last class takes every longer sequence.
inline constexpr std::array<SeqClass, 3> kSeqClasses = {{
    {"<=1024", 1024, 1024},
    {"<=4096", 4096, 4096},
    {">4096", std::numeric_limits<std::int64_t>::max(), 16384},
}};

/// The class of a key/value sequence length.
const SeqClass &seqClassOf(std::int64_t seqKv);

struct TuningEntry {
  KernelQuery group;
  std::string seqClass; // A kSeqClasses name.
  std::string kernel;   // The fastest candidate.
  double tflops = 0;    // Its throughput.
  /// Every candidate that passed its check, by name, with its TFLOP/s.
  std::map<std::string, double> candidates;
};

class TuningCache {
public:
  /// Reads `path`; throws, naming it, when it is missing or malformed.
  static TuningCache load(const std::string &path);
  /// `path`, or nothing when there is no such file.
  static std::optional<TuningCache> loadIfPresent(const std::string &path);
  /// Parses cache text; `path` names it in errors.
  static TuningCache parse(const std::string &json, const std::string &path);

  /// The cache as JSON text, entries in the order they were recorded.
  std::string serialize() const;
  /// Writes the cache to `path` atomically: readers see the old file or the
  /// new one, never half of one.
  void save(const std::string &path) const;

  /// The entry for a group and class, or null.
  const TuningEntry *find(const KernelQuery &group,
                          const std::string &seqClass) const;
  /// Adds `entry`, replacing one for the same group and class.
  void record(TuningEntry entry);

  std::string device; // The GPU it was tuned on.
  std::string path;   // Where it was read from; empty if built in memory.
  std::vector<TuningEntry> entries;
};

/// <kernel dir>/tuning.json.
std::string defaultTuningCachePath(const std::string &kernelDirectory);

} // namespace fa

#endif // FA_RUNTIME_TUNINGCACHE_H
