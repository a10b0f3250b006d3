//===- Graph.h - CUDA graphs captured from a stream -------------*- C++ -*-===//
//
// A CUDA graph records a sequence of launches once and replays it with one
// cuGraphLaunch: the kernels, memsets and copies run with the arguments they
// had when captured. For work bound by the host's launch rate (many small
// kernels), replaying saves the per-launch driver overhead.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_GRAPH_H
#define FA_RUNTIME_GRAPH_H

#include "fa/runtime/Stream.h"

#include <cuda.h>

#include <cstddef>
#include <functional>
#include <string>
#include <utility>

namespace fa {

/// A captured graph (CUgraph): what a stream's launches would have done.
class Graph {
public:
  /// Captures what `launches` enqueue on `stream` (none of it runs); `what`
  /// names the work in errors. The capture is thread-local: a call of this
  /// thread that a capture forbids (a synchronous copy, a stream wait, an
  /// allocation) fails instead of running, and other threads (NCCL's, the
  /// allocator's) are not constrained. When `launches` or the capture fails,
  /// the capture is ended and the stream usable again.
  static Graph capture(const Stream &stream,
                       const std::function<void()> &launches,
                       const std::string &what);
  ~Graph();
  Graph(Graph &&other) noexcept;
  Graph &operator=(Graph &&) = delete;
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  CUgraph get() const { return graph; }
  const std::string &name() const { return what; }
  /// The nodes (kernel launches, memsets, ...) the capture recorded.
  std::size_t nodeCount() const;

private:
  Graph(CUgraph graph, std::string what)
      : graph(graph), what(std::move(what)) {}

  CUgraph graph = nullptr;
  std::string what;
};

/// An instantiated graph (CUgraphExec), launched as one unit of work.
class GraphExec {
public:
  explicit GraphExec(const Graph &graph);
  ~GraphExec();
  GraphExec(const GraphExec &) = delete;
  GraphExec &operator=(const GraphExec &) = delete;

  /// Enqueues the whole graph on `stream`, after the stream's earlier work
  /// (and, the stream being blocking, the legacy stream's copies).
  void launch(const Stream &stream) const;

private:
  CUgraphExec exec = nullptr;
  std::string what;
};

} // namespace fa

#endif // FA_RUNTIME_GRAPH_H
