//===- Stream.h - CUDA streams and events -----------------------*- C++ -*-===//

#ifndef FA_RUNTIME_STREAM_H
#define FA_RUNTIME_STREAM_H

#include <cuda.h>

namespace fa {

/// A blocking stream: it waits for, and is waited on by, the legacy default
/// stream, so the synchronous copies of DeviceBuffer stay ordered with it.
/// High: the GPU's block scheduler starts this stream's blocks first when
/// several streams have work waiting (communication next to computation).
enum class StreamPriority { Normal, High };

class Stream {
public:
  explicit Stream(StreamPriority priority = StreamPriority::Normal);
  ~Stream();
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;

  CUstream get() const { return stream; }
  void synchronize() const;

private:
  CUstream stream = nullptr;
};

/// An event for timing work on a stream.
class Event {
public:
  Event();
  ~Event();
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;

  void record(const Stream &stream);
  /// Makes `stream` wait (on the GPU) for the work this event last recorded.
  void waitOn(const Stream &stream) const;
  CUevent get() const { return event; }
  /// Milliseconds between two recorded events; waits for `end`.
  static float elapsedMs(const Event &start, const Event &end);

private:
  CUevent event = nullptr;
};

} // namespace fa

#endif // FA_RUNTIME_STREAM_H
