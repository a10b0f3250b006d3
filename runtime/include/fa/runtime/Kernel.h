//===- Kernel.h - A library kernel loaded onto a GPU ------------*- C++ -*-===//

#ifndef FA_RUNTIME_KERNEL_H
#define FA_RUNTIME_KERNEL_H

#include "fa/runtime/Context.h"
#include "fa/runtime/KernelArgs.h"
#include "fa/runtime/KernelLibrary.h"
#include "fa/runtime/Module.h"

#include <cstdint>
#include <map>
#include <string>

namespace fa {

/// Throws unless code for `target` ("sm_90a", "sm_80") runs on `device`:
/// architecture-specific targets (the "a" suffix) need exactly that GPU,
/// plain ones any GPU at least as new (the driver JIT-compiles their PTX).
void checkTargetRunsOn(const std::string &target, const DeviceInfo &device,
                       const std::string &kernelName);

/// Values of a launch's grid symbols, by name ("one" needs none).
using GridSymbolValues = std::map<std::string, std::int64_t>;

/// The launch grid of `spec`, its symbols replaced by `values`. Throws, naming
/// the kernel, for a symbol without a value or an extent beyond CUDA's limits.
Dim3 resolveGrid(const KernelSpec &spec, const GridSymbolValues &values);

/// Whether one of `spec`'s grid dimensions is the symbol `symbol`.
bool gridUses(const KernelSpec &spec, const std::string &symbol);

/// The blocks of a persistent kernel, whose blocks loop over `tiles`: all of
/// them, but no more than the `residentBlocks` the GPU runs at once
/// (Kernel::residentBlocks). Throws, naming the kernel, when
/// `residentBlocks` < 1 (not one block fits).
std::int64_t persistentGridBlocks(const KernelSpec &kernel, std::int64_t tiles,
                                  std::int64_t residentBlocks);

/// A kernel from the library: its PTX loaded into the current context, its
/// dynamic shared memory allowed.
class Kernel {
public:
  Kernel(KernelSpec spec, const DeviceInfo &device);

  const KernelSpec &spec() const { return kernelSpec; }
  void launch(const Dim3 &grid, KernelArgs &args, CUstream stream) const;

  /// How many blocks of this kernel the GPU runs at once: its multiprocessors
  /// times the blocks of this block size and dynamic shared memory that fit on
  /// one (cuOccupancyMaxActiveBlocksPerMultiprocessor). Persistent kernels
  /// launch no more than this.
  std::int64_t residentBlocks() const;

private:
  KernelSpec kernelSpec;
  Module module;
  CUfunction function = nullptr;
  int multiprocessors = 0;
};

} // namespace fa

#endif // FA_RUNTIME_KERNEL_H
