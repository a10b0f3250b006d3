//===- GpuRunOptions.h - Options of kernel-running commands --*- C++ -*-===//
//
// `fa-run attention`, `fa-run layernorm` and `fa-run tune` all load the kernel
// library, run on one GPU, may time kernels, print text or JSON, and may be
// ctest cases that skip without a GPU. Their options and help texts are
// declared once here.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUN_GPURUNOPTIONS_H
#define FA_RUN_GPURUNOPTIONS_H

#include <CLI/CLI.hpp>

#include <string>

namespace fa {

struct GpuRunOptions {
  std::string kernelDir; // Empty: defaultKernelDirectory().
  int warmup = 10;
  int runs = 30;
  int device = 0;
  bool json = false;
  bool skipIfNoGpu = false;

  /// `kernelDir`, or the default library directory.
  std::string kernelDirectory() const;
};

/// $FA_KERNELS_DIR, else <fa-run's dir>/../kernels.
std::string defaultKernelDirectory();

/// --kernels.
void addKernelsOption(CLI::App *command, GpuRunOptions &options);
/// --warmup and --runs; `runsHelp` says what one timed run is.
void addTimingOptions(CLI::App *command, GpuRunOptions &options,
                      const std::string &runsHelp);
/// --device and --skip-if-no-gpu.
void addDeviceOptions(CLI::App *command, GpuRunOptions &options);
/// --json.
void addJsonOption(CLI::App *command, GpuRunOptions &options);

} // namespace fa

#endif // FA_RUN_GPURUNOPTIONS_H
