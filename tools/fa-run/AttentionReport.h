//===- AttentionReport.h - What `fa-run attention` found --------*- C++ -*-===//

#ifndef FA_RUN_ATTENTIONREPORT_H
#define FA_RUN_ATTENTIONREPORT_H

#include "MemoryReport.h"

#include "fa/runtime/AttentionShape.h"
#include "fa/runtime/AttentionVariant.h"
#include "fa/runtime/Benchmark.h"
#include "fa/runtime/Compare.h"
#include "fa/runtime/Context.h"
#include "fa/runtime/KernelChoice.h"
#include "fa/runtime/KernelLibrary.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace fa {

/// The backward's gradients against the reference.
struct GradientCheck {
  double relativeTolerance = 0;
  ErrorStats dq;
  ErrorStats dk;
  ErrorStats dv;
  std::optional<ErrorStats> dsinks; // A sinks backward's.

  bool passed() const {
    return dq.passes(relativeTolerance) && dk.passes(relativeTolerance) &&
           dv.passes(relativeTolerance) &&
           (!dsinks || dsinks->passes(relativeTolerance));
  }
};

struct CheckReport {
  std::string reference; // "cpu" or "gpu"
  double relativeTolerance = 0;
  ErrorStats out;
  ErrorStats lse;
  std::optional<GradientCheck> gradients; // With --grad.

  bool forwardPassed() const {
    return out.passes(relativeTolerance) && lse.passes(relativeTolerance);
  }
  bool passed() const {
    return forwardPassed() && (!gradients || gradients->passed());
  }
};

/// One kernel of a multi-kernel pass, timed alone.
struct KernelTiming {
  std::string stage;  // Its key: "delta", "dkdv", "dq" or "dsinks".
  std::string kernel; // Its name in the library.
  Timing timing;
};

struct BenchReport {
  Timing timing;
  int bufferSets = 1;
  double flops = 0; // Counted as AttentionShape::flops or backwardFlops.
  double tflops = 0;
  // The backward's kernels in launch order, each timed alone on the same
  // buffer sets, warmup and runs; empty for the forward.
  std::vector<KernelTiming> kernels;
};

/// The backward's kernels (--grad) and why its group's dq kernel was chosen.
struct BackwardKernelsReport {
  KernelSpec delta;
  KernelSpec dkdv;
  KernelSpec dq;
  KernelChoice choice;
  std::optional<KernelSpec> dsinks; // A sinks backward's dsinks kernel.
};

/// The variant a run computed (AttentionVariant.h); `name` is empty for
/// plain attention (with or without top-left causal).
struct VariantReport {
  std::string name;
  std::string values;  // AttentionVariant::describe().
  nlohmann::json json; // The values by key.
  std::int64_t keptPairs = 0;
};

/// What `variant` on `shape` reports.
VariantReport variantReport(const AttentionVariant &variant,
                            const AttentionShape &shape);

struct AttentionReport {
  KernelSpec kernel;
  VariantReport variant;
  KernelChoice choice; // Why this kernel of its group.
  DeviceInfo device;
  AttentionShape shape;
  std::optional<BackwardKernelsReport> backward;
  std::optional<CheckReport> check;
  std::optional<BenchReport> bench;
  std::optional<BenchReport> backwardBench;
  std::vector<std::string> filesWritten;
  MemoryReport memory;
};

void printText(const AttentionReport &report, std::ostream &os);
nlohmann::json toJson(const AttentionReport &report);

} // namespace fa

#endif // FA_RUN_ATTENTIONREPORT_H
