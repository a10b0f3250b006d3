//===- Kernel.h - A library kernel loaded onto a GPU ------------*- C++ -*-===//

#ifndef FA_RUNTIME_KERNEL_H
#define FA_RUNTIME_KERNEL_H

#include "fa/runtime/Context.h"
#include "fa/runtime/KernelArgs.h"
#include "fa/runtime/KernelLibrary.h"
#include "fa/runtime/Module.h"

namespace fa {

/// Throws unless code for `target` ("sm_90a", "sm_80") runs on `device`:
/// architecture-specific targets (the "a" suffix) need exactly that GPU,
/// plain ones any GPU at least as new (the driver JIT-compiles their PTX).
void checkTargetRunsOn(const std::string &target, const DeviceInfo &device,
                       const std::string &kernelName);

/// A kernel from the library: its PTX loaded into the current context, its
/// dynamic shared memory allowed.
class Kernel {
public:
  Kernel(KernelSpec spec, const DeviceInfo &device);

  const KernelSpec &spec() const { return kernelSpec; }
  void launch(const Dim3 &grid, KernelArgs &args, CUstream stream) const;

private:
  KernelSpec kernelSpec;
  Module module;
  CUfunction function = nullptr;
};

} // namespace fa

#endif // FA_RUNTIME_KERNEL_H
