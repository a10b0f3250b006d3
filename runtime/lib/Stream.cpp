//===- Stream.cpp ---------------------------------------------------------===//

#include "fa/runtime/Stream.h"

#include "fa/runtime/Driver.h"
#include "fa/runtime/Error.h"

namespace fa {

Stream::Stream(StreamPriority priority) {
  if (priority == StreamPriority::Normal) {
    checkCu(driver().cuStreamCreate(&stream, CU_STREAM_DEFAULT),
            "creating a CUDA stream");
    return;
  }
  // CUDA's priorities count down: the greatest is the most negative.
  int least = 0, greatest = 0;
  checkCu(driver().cuCtxGetStreamPriorityRange(&least, &greatest),
          "reading the range of CUDA stream priorities");
  checkCu(
      driver().cuStreamCreateWithPriority(&stream, CU_STREAM_DEFAULT, greatest),
      "creating a high-priority CUDA stream");
}

Stream::~Stream() {
  // Destroying only fails if the context is already gone; nothing to report.
  driver().cuStreamDestroy(stream);
}

void Stream::synchronize() const {
  checkCu(driver().cuStreamSynchronize(stream),
          "waiting for work on a CUDA stream (a kernel may have faulted)");
}

Event::Event() {
  checkCu(driver().cuEventCreate(&event, CU_EVENT_DEFAULT),
          "creating a CUDA event");
}

Event::~Event() { driver().cuEventDestroy(event); }

void Event::record(const Stream &stream) {
  checkCu(driver().cuEventRecord(event, stream.get()),
          "recording a CUDA event");
}

void Event::waitOn(const Stream &stream) const {
  checkCu(driver().cuStreamWaitEvent(stream.get(), event, 0),
          "making a CUDA stream wait for an event");
}

float Event::elapsedMs(const Event &start, const Event &end) {
  checkCu(driver().cuEventSynchronize(end.event),
          "waiting for a timing event (a kernel may have faulted)");
  float ms = 0;
  checkCu(driver().cuEventElapsedTime(&ms, start.event, end.event),
          "reading the time between two CUDA events");
  return ms;
}

} // namespace fa
