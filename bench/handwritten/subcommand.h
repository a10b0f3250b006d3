//===- subcommand.h - What fa-handwritten's subcommands share ---*- C++ -*-===//
//
// fa-handwritten has one subcommand per kernel family, each in a file of its
// own: a class deriving from Subcommand that declares its options and runs.
// Adding one (attention, say) is that file, a make...Command(CLI::App &)
// declared in its header, and one line in fa-handwritten.cpp.
//
// The subcommands take fa-run's options of the same names, with the same
// meanings and defaults, and print the same report (text, or --json with the
// same keys), so that one benchmark script drives both tools.
//
//===----------------------------------------------------------------------===//

#ifndef FA_BENCH_HANDWRITTEN_SUBCOMMAND_H
#define FA_BENCH_HANDWRITTEN_SUBCOMMAND_H

#include "fa/runtime/Benchmark.h"
#include "fa/runtime/Context.h"
#include "fa/runtime/DType.h"
#include "fa/runtime/Tensor.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <iostream>
#include <string>

namespace fa::handwritten {

/// Options every subcommand has (Subcommand::addRunOptions).
struct RunOptions {
  std::uint64_t seed = 0;
  int warmup = 10;
  int runs = 30;
  int device = 0;
  bool json = false;
  bool skipIfNoGpu = false;
};

class Subcommand {
public:
  virtual ~Subcommand() = default;
  Subcommand(const Subcommand &) = delete;
  Subcommand &operator=(const Subcommand &) = delete;

  /// Whether the command line chose this subcommand.
  bool parsed() const { return command->parsed(); }
  const RunOptions &runOptions() const { return options; }

  /// Runs the parsed subcommand; returns its exit code. Throws fa::Error
  /// (fa::NoDeviceError without a suitable GPU).
  virtual int run() = 0;

protected:
  /// Adds subcommand `name` to `app`.
  Subcommand(CLI::App &app, const std::string &name,
             const std::string &description);
  /// Declares the options of RunOptions, after the subcommand's own (so
  /// that --help lists those first); `runsHelp` says what one timed run is.
  void addRunOptions(const std::string &runsHelp);

  CLI::App *command;
  RunOptions options;
};

/// A CLI11 check that an option's value is a number of at least `minimum`
/// ("--runs: must be at least 1, got 0").
CLI::Validator atLeast(double minimum);

/// ctest reports a test that exits with this as SKIPPED.
inline constexpr int kSkippedExitCode = 77;

/// Runs `command`; an error is printed to stderr ("fa-handwritten: ...") and
/// exits 1, or 77 when there is no suitable GPU and --skip-if-no-gpu is set.
int runReportingErrors(Subcommand &command);

/// Throws NoDeviceError unless `device` runs the kernels, which are compiled
/// for sm_90a only (compute capability 9.0: H100, H200).
void requireSm90(const DeviceInfo &device);

/// Prints `report` (fa-run's AttentionReport or LayerNormReport) as text, or
/// with --json as fa-run's JSON plus "implementation": "handwritten"; returns
/// the exit code: 1 when its check failed.
template <typename Report>
int printReport(const Report &report, const RunOptions &options) {
  if (options.json) {
    nlohmann::json json = toJson(report);
    json["implementation"] = "handwritten";
    std::cout << json.dump(2) << "\n";
  } else {
    printText(report, std::cout);
  }
  if (report.check && !report.check->passed()) {
    std::cerr << "fa-handwritten: check failed: an output's error is above "
                 "its rtol or has unwritten elements\n";
    return 1;
  }
  return 0;
}

} // namespace fa::handwritten

#endif // FA_BENCH_HANDWRITTEN_SUBCOMMAND_H
