//===- OpCommand.h - The driver of fa-run's op commands ---------*- C++ -*-===//
//
// `fa-run attention` and `fa-run layernorm` run one op's kernels the same
// way; OpRun::run() is that flow, once:
//
//   1. Without touching a GPU: read the problem from .npy files or size it
//      from the options, count the host memory it needs, find its kernels in
//      the library (prepare). Whatever is wrong fails here, GPU or not.
//   2. On the device: settle what depends on it (a tuning cache's choice,
//      launch limits) and count the device memory the run needs against what
//      is free, before allocating anything (chooseKernels, deviceBudget).
//   3. Allocate, put the inputs on the device (uploaded from files, or drawn
//      from --seed: loadInputs) and run the forward (with --grad then the
//      backward) once on outputs poisoned with NaN (runPasses).
//   4. Write the outputs asked for, --check them against the fp64
//      reference, --bench the passes (writeOutputs, checkAgainstReference,
//      benchmarkPasses).
//   5. Print the report, text or --json; exit 1 when the check failed.
//
// An op is its options (OpRunOptions and its own), the CLI11 declarations
// with their help, and a class deriving from OpRunOf<its options, its
// report> that implements the steps.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUN_OPCOMMAND_H
#define FA_RUN_OPCOMMAND_H

#include "GpuRunOptions.h"
#include "HostTensors.h"
#include "MemoryReport.h"

#include "fa/runtime/Context.h"
#include "fa/runtime/DType.h"
#include "fa/runtime/MemoryBudget.h"
#include "fa/runtime/Stream.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace fa {

/// The options every op command has, besides GpuRunOptions.
struct OpRunOptions : GpuRunOptions {
  std::string dtype;
  std::uint64_t seed = 0; // Of the random inputs.
  bool grad = false;      // Also run the backward.
  bool check = false;
  double rtol = 0; // 0: the op's default for each output.
  bool bench = false;
  // --kernel / --backward-kernel: run these library kernels (by name)
  // instead of the ones the op would choose.
  std::string kernelName, backwardKernelName;
};

/// --dtype: required, one of bf16, f16 and f32.
void addDTypeOption(CLI::App *command, OpRunOptions &options,
                    const std::string &help);
/// --seed, in the --help group `group` (that of the sizes).
CLI::Option *addSeedOption(CLI::App *command, OpRunOptions &options,
                           const std::string &help, const std::string &group);

/// How an option naming a .npy file relates to the file the problem's shape
/// comes from (--q, --x).
enum class TensorFileRole {
  ShapeSource, // That file: the size options exclude it.
  Needed,      // One it cannot run without: it needs this one.
  Optional,    // An input or an output to write.
  Backward,    // The same, for --grad only.
};

struct TensorFileOption {
  const char *name;
  std::string &path;
  const char *help;
  TensorFileRole role;
};

/// Declares `files`, in order, in the --help group `group`. Each needs the
/// ShapeSource one, which `sizeOptions` exclude. Returns the Backward ones,
/// for the caller to make need --grad.
std::vector<CLI::Option *>
addTensorFileOptions(CLI::App *command, const std::string &group,
                     std::initializer_list<TensorFileOption> files,
                     const std::vector<CLI::Option *> &sizeOptions);

/// One run of an op's command; see the steps above. The hooks are called in
/// that order, each at most once.
class OpRun {
public:
  virtual ~OpRun() = default;
  OpRun(const OpRun &) = delete;
  OpRun &operator=(const OpRun &) = delete;

  /// Steps 1 to 5; returns the exit code (1 when --check fails). Throws
  /// fa::Error (NoDeviceError without a GPU).
  int run();

protected:
  /// `command`: the subcommand's name ("attention"), for messages.
  OpRun(std::string command, const OpRunOptions &options);

  /// The problem's sizes ("rows=4 cols=8"), for messages (OpRunOf
  /// implements it).
  virtual std::string describeShape() const = 0;

  // 1. Everything that can fail without a GPU; it calls checkHostMemory
  //    before allocating anything sized by the problem.
  virtual void prepare() = 0;
  // 2. What depends on the device, then the memory the run needs on it.
  virtual void chooseKernels(const DeviceInfo &device) = 0;
  virtual MemoryBudget deviceBudget(const DeviceInfo &device) = 0;
  // 3. Allocate, loadInputs, run once.
  virtual void runPasses(const DeviceInfo &device, const Stream &stream) = 0;
  // 4. Write the outputs asked for (always called); --check; --bench.
  virtual void writeOutputs() = 0;
  virtual void checkAgainstReference(const Stream &stream) = 0;
  virtual void benchmarkPasses(const DeviceInfo &device, const Stream &stream,
                               int warmup, int runs) = 0;
  // 5. The report (OpRunOf implements these two).
  virtual void printReport(const MemoryReport &memory, bool json,
                           std::ostream &os) = 0;
  virtual bool checkFailed() const = 0;

  /// "fa-run layernorm rows=4 cols=8 bf16 forward and backward".
  std::string describeRun() const;
  /// Throws, naming the run and the bytes, unless the host has the memory
  /// `budget` counts available.
  void checkHostMemory(const MemoryBudget &budget) const;
  /// Puts `inputs` on the device: uploaded from their host tensors if
  /// `fromFiles`, else drawn from --seed (then downloaded into the host
  /// tensors if `hostCopies`: for a CPU reference).
  void loadInputs(const std::vector<RunInput> &inputs, bool fromFiles,
                  bool hostCopies, const Stream &stream) const;

  /// The kernels' element type, --dtype.
  const DType dtype;

private:
  const std::string command;
  const OpRunOptions &runOptions;
  // Members of the base, so that they outlive the kernels and device
  // buffers of the derived class (a class's members are destroyed before its
  // bases are), as Context.h asks.
  std::optional<Context> context;
  std::optional<Stream> stream;
};

/// The OpRun of an op whose options are `Options` (an OpRunOptions) and
/// whose report is a `Report` (AttentionReport, LayerNormReport): the
/// report's `shape` names the run in messages, printText or toJson prints
/// it, and its `check` decides the exit code.
template <typename Options, typename Report> class OpRunOf : public OpRun {
public:
  /// `command`: the subcommand's name ("attention"), for messages.
  OpRunOf(std::string command, const Options &options)
      : OpRun(std::move(command), options), options(options) {}

protected:
  const Options &options;
  /// What the steps find; prepare() sets its `shape` before it names the run.
  Report report;

private:
  std::string describeShape() const final { return report.shape.describe(); }
  void printReport(const MemoryReport &memory, bool json,
                   std::ostream &os) final {
    report.memory = memory;
    if (json)
      os << toJson(report).dump(2) << "\n";
    else
      printText(report, os);
  }
  bool checkFailed() const final {
    return report.check && !report.check->passed();
  }
};

} // namespace fa

#endif // FA_RUN_OPCOMMAND_H
