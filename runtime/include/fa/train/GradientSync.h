//===- GradientSync.h - Data-parallel gradient averaging --------*- C++ -*-===//
//
// Every rank runs the same model on its rows of the global batch; before the
// optimizer step the flat f32 gradients are averaged over the ranks, in one
// of three ways (--ddp):
//   naive    one all-reduce per parameter tensor, after the backward;
//   flat     one all-reduce of the whole flat array, after the backward;
//   overlap  the array cut into buckets of --bucket-mb from its end; the
//            backward reports (GradientListener) how much of the array's end
//            is final, and each bucket's all-reduce starts on a
//            communication stream as soon as it is, overlapping the rest of
//            the backward.
// The backward finishes the array from the end to the start (head and final
// LayerNorm, then the layers from the last, then the embeddings), so "final"
// is always a suffix.
// ZeRO-1 (Zero1.h) reduce-scatters instead.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRAIN_GRADIENTSYNC_H
#define FA_TRAIN_GRADIENTSYNC_H

#include "fa/runtime/Stream.h"
#include "fa/train/Comm.h"
#include "fa/train/GptConfig.h"
#include "fa/train/StepProfile.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fa::train {

enum class SyncMode { Naive, Flat, Overlap, Zero1 };

/// "naive", "flat", "overlap" or "zero1"; throws fa::Error otherwise.
SyncMode parseSyncMode(const std::string &name);
const char *syncModeName(SyncMode mode);

/// Told by GptModel::backward as gradients become final.
class GradientListener {
public:
  virtual ~GradientListener() = default;
  /// Gradients [offset, end of the flat array) are final once the work
  /// enqueued on `compute` so far has run.
  virtual void ready(std::int64_t offset, const Stream &compute) = 0;
};

/// A bucket of the overlapped mode: [begin, end) of the flat array.
struct GradientBucket {
  std::int64_t begin = 0, end = 0;
};

/// Buckets of about `bucketElements` covering [0, total), cut from the end
/// (bucket 0 holds the array's end, which the backward finishes first).
std::vector<GradientBucket> gradientBuckets(std::int64_t total,
                                            std::int64_t bucketElements);

/// Averages the gradients of one backward over the ranks (naive, flat or
/// overlap). Use: listener() during backward, then finish().
class DdpSync : public GradientListener {
public:
  DdpSync(SyncMode mode, Communicator &comm, const ParameterLayout &layout,
          CUdeviceptr grads, double bucketMegabytes);
  ~DdpSync() override;

  /// What GptModel::backward should tell (null unless overlapping).
  GradientListener *listener() {
    return mode == SyncMode::Overlap ? this : nullptr;
  }
  void ready(std::int64_t offset, const Stream &compute) override;
  /// Enqueues what is left of the averaging and makes `compute` wait for
  /// all of it; the gradients are then averaged when compute's work runs.
  void finish(const Stream &compute);

  std::size_t bucketCount() const { return buckets.size(); }
  /// Times the all-reduces while `profiler` records a step: on the
  /// training stream as communication, the overlapped buckets' on the
  /// communication stream as overlapped communication.
  void setProfiler(StepProfiler *profiler) { this->profiler = profiler; }

private:
  void allReduce(std::int64_t begin, std::int64_t end, const Stream &stream,
                 const std::string &what);

  SyncMode mode;
  Communicator &comm;
  const ParameterLayout &layout;
  CUdeviceptr grads;
  std::vector<GradientBucket> buckets;
  std::size_t launched = 0; // Buckets started in this backward.
  std::unique_ptr<Stream> commStream;
  std::vector<std::unique_ptr<Event>> events; // One per bucket, and one more.
  StepProfiler *profiler = nullptr;
};

} // namespace fa::train

#endif // FA_TRAIN_GRADIENTSYNC_H
