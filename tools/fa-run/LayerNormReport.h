//===- LayerNormReport.h - What `fa-run layernorm` found --------*- C++ -*-===//

#ifndef FA_RUN_LAYERNORMREPORT_H
#define FA_RUN_LAYERNORMREPORT_H

#include "MemoryReport.h"

#include "fa/runtime/Benchmark.h"
#include "fa/runtime/Compare.h"
#include "fa/runtime/Context.h"
#include "fa/runtime/KernelLibrary.h"
#include "fa/runtime/LayerNormShape.h"
#include "fa/runtime/Tensor.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace fa {

/// One output against its reference.
struct OutputCheck {
  std::string name; // "y", "mean", ..., "dbias".
  ErrorStats errors;
  double relativeTolerance = 0;

  bool passed() const { return errors.passes(relativeTolerance); }
};

/// `actual` (an output held in `storage`: y and dx in the kernel's dtype,
/// the rest f32) against its fp64 reference, accepting `relativeTolerance`,
/// or defaultLayerNormTolerance(storage) when that is 0.
OutputCheck compareLayerNormOutput(const char *name, const HostTensor &actual,
                                   const std::vector<double> &reference,
                                   DType storage, double relativeTolerance);

struct LayerNormCheck {
  std::vector<OutputCheck> outputs;

  bool passed() const;
};

struct LayerNormBench {
  Timing timing;
  int bufferSets = 1;
  double bytes = 0; // The bytes the pass must move (LayerNormShape.h).
  double gbps = 0;  // bytes / median time.
};

struct LayerNormReport {
  DType dtype = DType::BF16;
  double eps = 0; // Passed to the forward kernel.
  LayerNormShape shape;
  Shape xShape;
  DeviceInfo device;
  KernelSpec forward;
  std::optional<KernelSpec> backward, params; // With --grad.
  std::int64_t backwardBlocks = 0;            // G.
  std::optional<LayerNormCheck> check;
  std::optional<LayerNormBench> forwardBench, backwardBench;
  std::vector<std::string> filesWritten;
  MemoryReport memory;
};

void printText(const LayerNormReport &report, std::ostream &os);
nlohmann::json toJson(const LayerNormReport &report);

} // namespace fa

#endif // FA_RUN_LAYERNORMREPORT_H
