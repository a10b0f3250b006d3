//===- Kernel.cpp ---------------------------------------------------------===//

#include "fa/runtime/Kernel.h"

#include "fa/runtime/Error.h"

#include "ReadFile.h"

#include <regex>

namespace fa {
namespace {

Module loadKernelModule(const KernelSpec &spec, const DeviceInfo &device) {
  checkTargetRunsOn(spec.target, device, spec.name);
  std::string what = "kernel " + spec.name + " from " + spec.ptxPath;
  std::string ptx = readFile(spec.ptxPath, "loading " + what);
  return Module(ptx.c_str(), what);
}

} // namespace

void checkTargetRunsOn(const std::string &target, const DeviceInfo &device,
                       const std::string &kernelName) {
  std::smatch match;
  static const std::regex targetPattern(R"(sm_(\d+)(a?))");
  if (!std::regex_match(target, match, targetPattern))
    throw Error("kernel " + kernelName + ": unknown target '" + target +
                "'; expected sm_<NN> or sm_<NN>a");
  int targetArch = std::stoi(match[1].str());
  bool archSpecific = match[2].length() > 0;
  int deviceArch = device.computeMajor * 10 + device.computeMinor;
  bool runs =
      archSpecific ? deviceArch == targetArch : deviceArch >= targetArch;
  if (!runs)
    throw Error("kernel " + kernelName + " is built for " + target +
                ", which cannot run on device " +
                std::to_string(device.ordinal) + " (" + device.name + ", " +
                device.smName() + ")");
}

Kernel::Kernel(KernelSpec spec, const DeviceInfo &device)
    : kernelSpec(std::move(spec)),
      module(loadKernelModule(kernelSpec, device)) {
  function = module.function(kernelSpec.entry);
  allowDynamicSharedMemory(function, kernelSpec.dynamicSharedBytes,
                           kernelSpec.name);
}

void Kernel::launch(const Dim3 &grid, KernelArgs &args, CUstream stream) const {
  LaunchConfig config{grid, kernelSpec.block, kernelSpec.dynamicSharedBytes};
  launchKernel(function, config, stream, args.pointers(), kernelSpec.name);
}

} // namespace fa
