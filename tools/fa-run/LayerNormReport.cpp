//===- LayerNormReport.cpp ------------------------------------------------===//

#include "LayerNormReport.h"

#include "ReportFormat.h"

#include <algorithm>

namespace fa {
namespace {

std::string forwardBytesFormula(DType dtype) {
  return "2 * rows * cols * " + std::to_string(dtypeBytes(dtype)) +
         " bytes: x read, y written";
}

std::string backwardBytesFormula(DType dtype) {
  return "3 * rows * cols * " + std::to_string(dtypeBytes(dtype)) +
         " bytes: x and dy read, dx written";
}

void printKernel(const char *role, const KernelSpec &kernel, std::ostream &os) {
  os << "kernel  " << role << kernel.name << " (" << kernel.describe() << ")\n";
}

void printBench(const char *pass, const LayerNormBench &bench,
                const std::string &formula, std::ostream &os) {
  os << "bench   " << pass << fixed(bench.timing.medianMs, 4)
     << " ms (median of " << bench.timing.runs << ", min "
     << fixed(bench.timing.minMs, 4) << ", max " << fixed(bench.timing.maxMs, 4)
     << ", " << bench.bufferSets << " buffer sets)  " << fixed(bench.gbps, 1)
     << " GB/s counting " << formula << "\n";
}

nlohmann::json kernelJson(const KernelSpec &kernel) {
  return {{"name", kernel.name},
          {"op", kernel.op},
          {"describe", kernel.describe()},
          {"config", kernel.config}};
}

nlohmann::json benchJson(const LayerNormBench &bench,
                         const std::string &formula) {
  return {{"median_ms", bench.timing.medianMs}, {"min_ms", bench.timing.minMs},
          {"max_ms", bench.timing.maxMs},       {"runs", bench.timing.runs},
          {"buffer_sets", bench.bufferSets},    {"bytes", bench.bytes},
          {"bytes_formula", formula},           {"gbps", bench.gbps}};
}

} // namespace

OutputCheck compareLayerNormOutput(const char *name, const HostTensor &actual,
                                   const std::vector<double> &reference,
                                   DType storage, double relativeTolerance) {
  return {name, compareWithReference(actual.values, reference),
          relativeTolerance > 0 ? relativeTolerance
                                : defaultLayerNormTolerance(storage)};
}

bool LayerNormCheck::passed() const {
  return std::all_of(outputs.begin(), outputs.end(),
                     [](const OutputCheck &output) { return output.passed(); });
}

void printText(const LayerNormReport &report, std::ostream &os) {
  printKernel("forward   ", report.forward, os);
  if (report.backward) {
    printKernel("backward  ", *report.backward, os);
    os << "        " << report.backwardBlocks
       << " persistent blocks (at most what the GPU runs at once)\n";
    printKernel("params    ", *report.params, os);
  }
  os << "device  " << report.device.name << " (" << report.device.smName()
     << ", " << report.device.multiprocessors << " SMs)\n"
     << "shape   " << report.shape.describe() << " (x "
     << formatShape(report.xShape) << ") dtype=" << dtypeName(report.dtype)
     << " eps=" << formatEps(report.eps) << "\n";
  for (const std::string &file : report.filesWritten)
    os << "wrote   " << file << "\n";
  if (const auto &check = report.check) {
    for (const OutputCheck &output : check->outputs)
      os << "check   " << describeErrors(output.name, output.errors)
         << "  rtol=" << scientific(output.relativeTolerance) << "  "
         << (output.passed() ? "pass" : "FAIL") << "\n";
    os << "check   reference=cpu (fp64)  "
       << (check->passed() ? "PASS" : "FAIL") << "\n";
  }
  if (const auto &bench = report.forwardBench)
    printBench("forward  ", *bench, forwardBytesFormula(report.dtype), os);
  if (const auto &bench = report.backwardBench)
    printBench("backward ", *bench, backwardBytesFormula(report.dtype), os);
  os << "memory  " << describeMemory(report.memory) << "\n";
}

nlohmann::json toJson(const LayerNormReport &report) {
  nlohmann::json kernels = {{"forward", kernelJson(report.forward)}};
  if (report.backward) {
    kernels["backward"] = kernelJson(*report.backward);
    kernels["backward"]["blocks"] = report.backwardBlocks;
    kernels["params"] = kernelJson(*report.params);
  }
  nlohmann::json json = {{"op", "layernorm"},
                         {"grad", report.backward.has_value()},
                         {"dtype", dtypeName(report.dtype)},
                         {"eps", report.eps},
                         {"rows", report.shape.rows},
                         {"cols", report.shape.cols},
                         {"x_shape", report.xShape},
                         {"device", report.device.name},
                         {"kernels", kernels},
                         {"files_written", report.filesWritten}};
  if (const auto &check = report.check) {
    nlohmann::json outputs = nlohmann::json::object();
    for (const OutputCheck &output : check->outputs) {
      nlohmann::json errors = errorsJson(output.errors);
      errors["rtol"] = output.relativeTolerance;
      errors["passed"] = output.passed();
      outputs[output.name] = errors;
    }
    json["check"] = {{"reference", "cpu"},
                     {"outputs", outputs},
                     {"passed", check->passed()}};
  }
  if (report.forwardBench || report.backwardBench) {
    nlohmann::json bench = nlohmann::json::object();
    if (const auto &forward = report.forwardBench)
      bench["forward"] = benchJson(*forward, forwardBytesFormula(report.dtype));
    if (const auto &backward = report.backwardBench)
      bench["backward"] =
          benchJson(*backward, backwardBytesFormula(report.dtype));
    json["bench"] = bench;
  }
  json["memory"] = memoryJson(report.memory);
  return json;
}

} // namespace fa
