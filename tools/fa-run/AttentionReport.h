//===- AttentionReport.h - What `fa-run attention` found --------*- C++ -*-===//

#ifndef FA_RUN_ATTENTIONREPORT_H
#define FA_RUN_ATTENTIONREPORT_H

#include "fa/runtime/AttentionShape.h"
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

struct CheckReport {
  std::string reference; // "cpu" or "gpu"
  double relativeTolerance = 0;
  ErrorStats out;
  ErrorStats lse;

  bool passed() const {
    return out.passes(relativeTolerance) && lse.passes(relativeTolerance);
  }
};

struct BenchReport {
  Timing timing;
  int bufferSets = 1;
  double tflops = 0;
};

struct AttentionReport {
  KernelSpec kernel;
  KernelChoice choice; // Why this kernel of its group.
  DeviceInfo device;
  AttentionShape shape;
  std::optional<CheckReport> check;
  std::optional<BenchReport> bench;
  std::vector<std::string> filesWritten;
};

void printText(const AttentionReport &report, std::ostream &os);
nlohmann::json toJson(const AttentionReport &report);

} // namespace fa

#endif // FA_RUN_ATTENTIONREPORT_H
