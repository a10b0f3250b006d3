//===- Launch.h - Kernel launches -------------------------------*- C++ -*-===//

#ifndef FA_RUNTIME_LAUNCH_H
#define FA_RUNTIME_LAUNCH_H

#include <cuda.h>

#include <string>

namespace fa {

struct Dim3 {
  unsigned x = 1;
  unsigned y = 1;
  unsigned z = 1;
};

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  unsigned dynamicSharedBytes = 0;
};

/// Kernels get 48 KB of dynamic shared memory unless they opt in to more;
/// this opts `function` in to `bytes` when that is above the default.
void allowDynamicSharedMemory(CUfunction function, unsigned bytes,
                              const std::string &kernelName);

/// cuLaunchKernel; `args` holds one pointer per kernel parameter.
void launchKernel(CUfunction function, const LaunchConfig &config,
                  CUstream stream, void **args, const std::string &kernelName);

} // namespace fa

#endif // FA_RUNTIME_LAUNCH_H
