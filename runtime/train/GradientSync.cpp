//===- GradientSync.cpp - Data-parallel gradient averaging ----------------===//

#include "fa/train/GradientSync.h"

#include "fa/runtime/Error.h"
#include "fa/runtime/Nvtx.h"

#include <algorithm>

namespace fa::train {

SyncMode parseSyncMode(const std::string &name) {
  if (name == "naive")
    return SyncMode::Naive;
  if (name == "flat")
    return SyncMode::Flat;
  if (name == "overlap")
    return SyncMode::Overlap;
  if (name == "zero1")
    return SyncMode::Zero1;
  throw Error("unknown gradient synchronisation '" + name +
              "' (naive, flat, overlap or zero1)");
}

const char *syncModeName(SyncMode mode) {
  switch (mode) {
  case SyncMode::Naive:
    return "naive";
  case SyncMode::Flat:
    return "flat";
  case SyncMode::Overlap:
    return "overlap";
  case SyncMode::Zero1:
    return "zero1";
  }
  return "?";
}

std::vector<GradientBucket> gradientBuckets(std::int64_t total,
                                            std::int64_t bucketElements) {
  if (total <= 0 || bucketElements <= 0)
    throw Error("gradient buckets: " + std::to_string(total) +
                " elements in buckets of " + std::to_string(bucketElements) +
                " (both must be positive)");
  // Bucket starts are rounded down to multiples of 8 elements (32 bytes), so
  // every all-reduce starts aligned.
  std::vector<GradientBucket> buckets;
  for (std::int64_t end = total; end > 0;) {
    std::int64_t begin = std::max<std::int64_t>(0, end - bucketElements);
    begin = begin / 8 * 8;
    buckets.push_back({begin, end});
    end = begin;
  }
  return buckets;
}

DdpSync::DdpSync(SyncMode mode, Communicator &comm,
                 const ParameterLayout &layout, CUdeviceptr grads,
                 double bucketMegabytes)
    : mode(mode), comm(comm), layout(layout), grads(grads) {
  if (mode == SyncMode::Zero1)
    throw Error("DdpSync averages gradients for naive, flat and overlap; "
                "ZeRO-1 reduce-scatters them");
  if (mode != SyncMode::Overlap)
    return;
  if (!(bucketMegabytes > 0))
    throw Error("--bucket-mb must be positive");
  const auto bucketElements =
      static_cast<std::int64_t>(bucketMegabytes * (1 << 20) / sizeof(float));
  buckets = gradientBuckets(layout.totalSize(), bucketElements);
  // High priority: a bucket's all-reduce gets SMs as soon as the backward's
  // blocks retire, instead of queueing behind the next backward kernel.
  commStream = std::make_unique<Stream>(StreamPriority::High);
  for (std::size_t i = 0; i <= buckets.size(); ++i)
    events.push_back(std::make_unique<Event>());
}

DdpSync::~DdpSync() = default;

void DdpSync::allReduce(std::int64_t begin, std::int64_t end,
                        const Stream &stream, const std::string &what) {
  comm.allReduce(grads + begin * sizeof(float), grads + begin * sizeof(float),
                 end - begin, DType::F32, ReduceOp::Average, stream, what);
}

void DdpSync::ready(std::int64_t offset, const Stream &compute) {
  // Start every bucket that is now wholly final, in order (ranks must issue
  // the same collectives in the same order).
  while (launched < buckets.size() && buckets[launched].begin >= offset) {
    NvtxRange range{"all-reduce gradient bucket"};
    events[launched]->record(compute);
    events[launched]->waitOn(*commStream);
    // After the wait: the bucket's time is its all-reduce's, not the
    // backward's it waited for.
    PhaseScope scope(profiler, Phase::Communication, *commStream, true);
    allReduce(buckets[launched].begin, buckets[launched].end, *commStream,
              "gradient bucket " + std::to_string(launched));
    ++launched;
  }
}

void DdpSync::finish(const Stream &compute) {
  NvtxRange range{"average gradients"};
  switch (mode) {
  case SyncMode::Naive: {
    PhaseScope scope(profiler, Phase::Communication, compute);
    for (const ParameterTensor &tensor : layout.tensors())
      allReduce(tensor.offset, tensor.offset + tensor.size, compute,
                "the gradient of " + tensor.name);
    return;
  }
  case SyncMode::Flat: {
    PhaseScope scope(profiler, Phase::Communication, compute);
    allReduce(0, layout.totalSize(), compute, "the flat gradients");
    return;
  }
  case SyncMode::Overlap:
    ready(0, compute);
    events.back()->record(*commStream);
    events.back()->waitOn(compute);
    launched = 0;
    return;
  case SyncMode::Zero1:
    break;
  }
}

} // namespace fa::train
