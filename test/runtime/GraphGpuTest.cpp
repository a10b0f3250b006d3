//===- GraphGpuTest.cpp - CUDA graphs captured from a stream --------------===//
//
// Graph.h on a GPU: a capture records without running, a replay runs what
// was recorded, and a call a capture cannot record fails with its own
// message and leaves the stream usable. Skipped without a GPU.
//
//===----------------------------------------------------------------------===//

#include "GpuTesting.h"

#include "fa/runtime/Graph.h"

using namespace fa;
using namespace fa::gputest;

namespace {

constexpr std::size_t kBytes = 64;

TEST_F(GpuTest, GraphReplaysWhatItCaptured) {
  DeviceBuffer buffer("the graph's buffer", kBytes);
  buffer.fill(0, stream->get());
  stream->synchronize();
  Graph graph = Graph::capture(
      *stream, [&] { buffer.fill(7, stream->get()); }, "a fill of 7s");
  stream->synchronize();
  // Captured, not run.
  EXPECT_EQ(buffer.download(), Bytes(kBytes, 0));
  EXPECT_EQ(graph.nodeCount(), 1u);

  GraphExec exec(graph);
  for (int replay = 0; replay < 2; ++replay) {
    buffer.fill(0, stream->get());
    exec.launch(*stream);
    stream->synchronize();
    EXPECT_EQ(buffer.download(), Bytes(kBytes, 7)) << "replay " << replay;
  }
}

TEST_F(GpuTest, GraphCaptureRefusesAStreamWaitAndEnds) {
  DeviceBuffer buffer("the graph's buffer", kBytes);
  try {
    Graph::capture(
        *stream,
        [&] {
          buffer.fill(7, stream->get());
          stream->synchronize();
        },
        "a fill and a wait");
    FAIL() << "expected the stream wait inside the capture to fail";
  } catch (const Error &error) {
    EXPECT_NE(
        std::string(error.what()).find("waiting for work on a CUDA stream"),
        std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("CUDA_ERROR_STREAM_CAPTURE"),
              std::string::npos)
        << error.what();
  }
  // The capture ended: the stream runs work again.
  buffer.fill(3, stream->get());
  stream->synchronize();
  EXPECT_EQ(buffer.download(), Bytes(kBytes, 3));
}

} // namespace
