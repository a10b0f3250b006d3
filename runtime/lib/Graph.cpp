//===- Graph.cpp ----------------------------------------------------------===//

#include "fa/runtime/Graph.h"

#include "fa/runtime/Driver.h"
#include "fa/runtime/Error.h"

namespace fa {

Graph Graph::capture(const Stream &stream,
                     const std::function<void()> &launches,
                     const std::string &what) {
  checkCu(driver().cuStreamBeginCapture(stream.get(),
                                        CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
          "starting to capture " + what + " into a CUDA graph");
  CUgraph graph = nullptr;
  try {
    launches();
  } catch (...) {
    // End the capture, so that the stream takes work again; the launches'
    // error is the one to report, and the partial graph is dropped.
    if (driver().cuStreamEndCapture(stream.get(), &graph) == CUDA_SUCCESS &&
        graph)
      driver().cuGraphDestroy(graph);
    throw;
  }
  checkCu(driver().cuStreamEndCapture(stream.get(), &graph),
          "capturing " + what +
              " into a CUDA graph (a call inside the capture was one that a "
              "capture cannot record)");
  return Graph(graph, what);
}

Graph::~Graph() {
  // Destroying only fails for a graph already gone; nothing to report.
  if (graph)
    driver().cuGraphDestroy(graph);
}

Graph::Graph(Graph &&other) noexcept
    : graph(other.graph), what(std::move(other.what)) {
  other.graph = nullptr;
}

std::size_t Graph::nodeCount() const {
  std::size_t count = 0;
  checkCu(driver().cuGraphGetNodes(graph, nullptr, &count),
          "counting the nodes of the CUDA graph of " + what);
  return count;
}

GraphExec::GraphExec(const Graph &graph) : what(graph.name()) {
  checkCu(driver().cuGraphInstantiate(&exec, graph.get(), 0),
          "instantiating the CUDA graph of " + what);
}

GraphExec::~GraphExec() {
  if (exec)
    driver().cuGraphExecDestroy(exec);
}

void GraphExec::launch(const Stream &stream) const {
  checkCu(driver().cuGraphLaunch(exec, stream.get()),
          "launching the CUDA graph of " + what);
}

} // namespace fa
