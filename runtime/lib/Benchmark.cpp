//===- Benchmark.cpp ------------------------------------------------------===//

#include "fa/runtime/Benchmark.h"

#include "fa/runtime/Error.h"

#include <algorithm>
#include <string>
#include <vector>

namespace fa {

Timing timeOnStream(const Stream &stream, int warmup, int runs,
                    const std::function<void(int run)> &enqueue) {
  if (runs < 1)
    throw Error("timing: need at least one run, got " + std::to_string(runs));
  for (int run = 0; run < warmup; ++run)
    enqueue(run);

  // All events are recorded before any is read, so the GPU never waits for
  // the host between runs.
  std::vector<Event> starts(runs), ends(runs);
  for (int run = 0; run < runs; ++run) {
    starts[run].record(stream);
    enqueue(warmup + run);
    ends[run].record(stream);
  }
  std::vector<double> ms;
  for (int run = 0; run < runs; ++run)
    ms.push_back(Event::elapsedMs(starts[run], ends[run]));
  std::sort(ms.begin(), ms.end());

  Timing timing;
  timing.runs = runs;
  timing.minMs = ms.front();
  timing.maxMs = ms.back();
  timing.medianMs =
      runs % 2 ? ms[runs / 2] : (ms[runs / 2 - 1] + ms[runs / 2]) / 2;
  return timing;
}

int rotationCopies(std::size_t workingSetBytes, std::size_t l2Bytes,
                   int maxCopies) {
  std::size_t span = 2 * l2Bytes;
  if (workingSetBytes == 0 || workingSetBytes >= span)
    return 1;
  std::size_t copies = (span + workingSetBytes - 1) / workingSetBytes;
  return static_cast<int>(std::min<std::size_t>(copies, maxCopies));
}

} // namespace fa
