//===- Kernel.cpp ---------------------------------------------------------===//

#include "fa/runtime/Kernel.h"

#include "fa/runtime/Driver.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/Nvtx.h"

#include "ReadFile.h"

#include <algorithm>
#include <limits>
#include <regex>

namespace fa {
namespace {

Module loadKernelModule(const KernelSpec &spec, const DeviceInfo &device) {
  checkTargetRunsOn(spec.target, device, spec.name);
  std::string what = "kernel " + spec.name + " from " + spec.ptxPath;
  // The PTX is JIT-compiled here: the longest step of a short run.
  NvtxRange range{"load " + what};
  std::string ptx = readFile(spec.ptxPath, "loading " + what);
  return Module(ptx.c_str(), what);
}

/// CUDA's limits on a grid's x and on its y and z dimensions.
constexpr std::int64_t kMaxGridX = std::numeric_limits<int>::max();
constexpr std::int64_t kMaxGridYZ = 65535;

unsigned gridExtent(const GridExtent &extent, const KernelSpec &spec,
                    const GridSymbolValues &values, std::int64_t limit) {
  if (extent.symbol.empty())
    return extent.count;
  if (extent.symbol == "one")
    return 1;
  auto value = values.find(extent.symbol);
  if (value == values.end())
    throw Error("kernel " + spec.name + ": grid symbol '" + extent.symbol +
                "' has no value in this launch (op " + spec.op + ")");
  if (value->second > limit)
    throw Error("kernel " + spec.name + ": grid dimension " + extent.symbol +
                " = " + std::to_string(value->second) +
                " exceeds CUDA's limit of " + std::to_string(limit) +
                " for that dimension");
  return static_cast<unsigned>(value->second);
}

} // namespace

Dim3 resolveGrid(const KernelSpec &spec, const GridSymbolValues &values) {
  return {gridExtent(spec.grid[0], spec, values, kMaxGridX),
          gridExtent(spec.grid[1], spec, values, kMaxGridYZ),
          gridExtent(spec.grid[2], spec, values, kMaxGridYZ)};
}

bool gridUses(const KernelSpec &spec, const std::string &symbol) {
  return std::any_of(
      spec.grid.begin(), spec.grid.end(),
      [&](const GridExtent &extent) { return extent.symbol == symbol; });
}

std::int64_t persistentGridBlocks(const KernelSpec &kernel, std::int64_t tiles,
                                  std::int64_t residentBlocks) {
  if (residentBlocks < 1)
    throw Error(
        "kernel " + kernel.name + ": not one block of " +
        std::to_string(kernel.block.x * kernel.block.y * kernel.block.z) +
        " threads fits on this GPU (occupancy 0)");
  return std::min(tiles, residentBlocks);
}

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
    : kernelSpec(std::move(spec)), module(loadKernelModule(kernelSpec, device)),
      multiprocessors(device.multiprocessors) {
  function = module.function(kernelSpec.entry);
  allowDynamicSharedMemory(function, kernelSpec.dynamicSharedBytes,
                           kernelSpec.name);
}

void Kernel::launch(const Dim3 &grid, KernelArgs &args, CUstream stream) const {
  LaunchConfig config{grid, kernelSpec.block, kernelSpec.dynamicSharedBytes};
  launchKernel(function, config, stream, args.pointers(), kernelSpec.name);
}

std::int64_t Kernel::residentBlocks() const {
  const Dim3 &block = kernelSpec.block;
  int threads = static_cast<int>(block.x * block.y * block.z);
  int perMultiprocessor = 0;
  checkCu(
      driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(
          &perMultiprocessor, function, threads, kernelSpec.dynamicSharedBytes),
      "computing how many blocks of kernel " + kernelSpec.name + " (" +
          std::to_string(threads) + " threads, " +
          std::to_string(kernelSpec.dynamicSharedBytes) +
          " bytes of dynamic shared memory) fit on a multiprocessor");
  return static_cast<std::int64_t>(perMultiprocessor) * multiprocessors;
}

} // namespace fa
