//===- OpCommand.cpp - The driver of fa-run's op commands -----------------===//

#include "OpCommand.h"

#include "fa/runtime/DeviceBuffer.h"

#include <cassert>
#include <iostream>

namespace fa {

void addDTypeOption(CLI::App *command, OpRunOptions &o,
                    const std::string &help) {
  command->add_option("--dtype", o.dtype, help)
      ->required()
      ->check(CLI::IsMember({"bf16", "f16", "f32"}));
}

CLI::Option *addSeedOption(CLI::App *command, OpRunOptions &o,
                           const std::string &help, const std::string &group) {
  return command->add_option("--seed", o.seed, help)
      ->capture_default_str()
      ->group(group);
}

std::vector<CLI::Option *>
addTensorFileOptions(CLI::App *command, const std::string &group,
                     std::initializer_list<TensorFileOption> files,
                     const std::vector<CLI::Option *> &sizeOptions) {
  std::vector<std::pair<CLI::Option *, TensorFileRole>> declared;
  CLI::Option *shapeSource = nullptr;
  for (const TensorFileOption &file : files) {
    CLI::Option *option =
        command->add_option(file.name, file.path, file.help)->group(group);
    declared.emplace_back(option, file.role);
    if (file.role == TensorFileRole::ShapeSource) {
      assert(!shapeSource && "one file gives the problem's shape");
      shapeSource = option;
    }
  }
  assert(shapeSource && "one file gives the problem's shape");
  std::vector<CLI::Option *> backward;
  for (auto [option, role] : declared) {
    if (role == TensorFileRole::ShapeSource)
      continue;
    option->needs(shapeSource);
    if (role == TensorFileRole::Needed)
      shapeSource->needs(option);
    if (role == TensorFileRole::Backward)
      backward.push_back(option);
  }
  for (CLI::Option *option : sizeOptions)
    option->excludes(shapeSource);
  return backward;
}

OpRun::OpRun(std::string command, const OpRunOptions &options)
    : dtype(parseDType(options.dtype)), command(std::move(command)),
      runOptions(options) {}

std::string OpRun::describeRun() const {
  return "fa-run " + command + " " + describeShape() + " " + dtypeName(dtype) +
         (runOptions.grad ? " forward and backward" : " forward");
}

void OpRun::checkHostMemory(const MemoryBudget &budget) const {
  budget.checkHost(describeRun(), availableHostMemory());
}

void OpRun::loadInputs(const std::vector<RunInput> &inputs, bool fromFiles,
                       bool hostCopies, const Stream &stream) const {
  if (fromFiles) {
    uploadInputs(inputs, dtype);
    return;
  }
  drawRandomInputs(runOptions.seed, inputs, dtype, stream);
  if (hostCopies)
    downloadInputs(inputs, dtype);
}

int OpRun::run() {
  // Everything that can fail without a GPU is done before touching one, and
  // nothing sized by the problem is allocated before its memory is counted.
  prepare();
  const DeviceInfo &device = context.emplace(runOptions.device).device();
  chooseKernels(device);
  deviceBudget(device).checkDevice(describeRun(), freeDeviceMemory());

  runPasses(device, stream.emplace());
  // Allocations sample the GPU's used memory as they raise fa-run's peak;
  // these samples add what the driver reserved for the launches.
  DeviceBuffer::sampleDeviceUsage();
  writeOutputs();
  if (runOptions.check)
    checkAgainstReference(*stream);
  if (runOptions.bench)
    benchmarkPasses(device, *stream, runOptions.warmup, runOptions.runs);
  DeviceBuffer::sampleDeviceUsage();

  printReport(processMemoryReport(), runOptions.json, std::cout);
  if (checkFailed()) {
    std::cerr << "fa-run: check failed: an output's error is above its rtol "
                 "or has unwritten elements\n";
    return 1;
  }
  return 0;
}

} // namespace fa
