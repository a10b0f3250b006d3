//===- Benchmark.h - Timing GPU work ----------------------------*- C++ -*-===//

#ifndef FA_RUNTIME_BENCHMARK_H
#define FA_RUNTIME_BENCHMARK_H

#include "fa/runtime/Stream.h"

#include <cstddef>
#include <functional>
#include <vector>

namespace fa {

struct Timing {
  double medianMs = 0;
  double minMs = 0;
  double maxMs = 0;
  int runs = 0;
};

/// Calls `enqueue(run)` `warmup` times untimed, then `runs` times, each
/// between two CUDA events on `stream`; `run` counts from 0 across both, so
/// callers can rotate buffers with it.
Timing timeOnStream(const Stream &stream, int warmup, int runs,
                    const std::function<void(int run)> &enqueue);

/// timeOnStream where run i enqueues launches[i % size] (each a launch with
/// an `enqueue(const Stream &)` on its own buffer set), so that the runs
/// rotate through a benchmark's buffer sets.
template <typename Launch>
Timing timeRotating(std::vector<Launch> &launches, const Stream &stream,
                    int warmup, int runs) {
  return timeOnStream(stream, warmup, runs, [&](int run) {
    launches[run % launches.size()].enqueue(stream);
  });
}

/// How many copies of a `workingSetBytes` working set to rotate through so
/// that no run finds its inputs in L2 from the previous ones: enough to span
/// twice the L2, at most `maxCopies`, and 1 for sets that are already that
/// large.
int rotationCopies(std::size_t workingSetBytes, std::size_t l2Bytes,
                   int maxCopies);

/// The usual maxCopies: tiny problems would need thousands of buffer sets to
/// span 2x L2; they are bound by launch latency anyway.
inline constexpr int kMaxBufferSets = 64;

} // namespace fa

#endif // FA_RUNTIME_BENCHMARK_H
