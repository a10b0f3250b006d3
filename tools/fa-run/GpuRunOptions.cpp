//===- GpuRunOptions.cpp - Options of the subcommands that run kernels ----===//

#include "GpuRunOptions.h"

#include <cstdlib>
#include <filesystem>

namespace fa {

std::string GpuRunOptions::kernelDirectory() const {
  return kernelDir.empty() ? defaultKernelDirectory() : kernelDir;
}

std::string defaultKernelDirectory() {
  if (const char *fromEnvironment = std::getenv("FA_KERNELS_DIR"))
    return fromEnvironment;
  std::filesystem::path executable =
      std::filesystem::read_symlink("/proc/self/exe");
  return (executable.parent_path().parent_path() / "kernels").string();
}

void addKernelsOption(CLI::App *command, GpuRunOptions &o) {
  command->add_option(
      "--kernels", o.kernelDir,
      "Kernel library directory (holding manifest.json). "
      "Default: $FA_KERNELS_DIR, else <fa-run's dir>/../kernels");
}

void addTimingOptions(CLI::App *command, GpuRunOptions &o,
                      const std::string &runsHelp) {
  command->add_option("--warmup", o.warmup, "Untimed runs before timing")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command->add_option("--runs", o.runs, runsHelp)
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

void addDeviceOptions(CLI::App *command, GpuRunOptions &o) {
  command->add_option("--device", o.device, "CUDA device ordinal")
      ->capture_default_str();
  command->add_flag("--skip-if-no-gpu", o.skipIfNoGpu,
                    "Exit with 77 (ctest's SKIPPED) instead of 1 when there is "
                    "no GPU");
}

void addJsonOption(CLI::App *command, GpuRunOptions &o) {
  command->add_flag("--json", o.json, "Print one JSON object instead of text");
}

} // namespace fa
