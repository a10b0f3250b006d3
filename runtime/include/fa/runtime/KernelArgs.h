//===- KernelArgs.h - Parameters in MLIR's calling convention --*- C++ -*-===//
//
// Kernels lowered by MLIR take each memref as its expanded descriptor. A
// rank-R memref parameter becomes 3 + 2R kernel parameters:
//   allocated pointer (u64), aligned pointer (u64), offset (i64),
//   sizes[R] (i64), strides[R] (i64)
// The runtime passes contiguous row-major tensors: both pointers are the
// buffer's address, offset 0, strides row-major. Scalars (i32, i64, f32) are
// one parameter each. Memrefs of int32 (doc_ids) are bound as I32MemrefArg.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_KERNELARGS_H
#define FA_RUNTIME_KERNELARGS_H

#include "fa/runtime/KernelLibrary.h"
#include "fa/runtime/Tensor.h"

#include <cuda.h>

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace fa {

/// A contiguous row-major tensor on the device.
struct MemrefArg {
  CUdeviceptr data = 0;
  DType dtype = DType::F32;
  Shape shape;
};

/// A contiguous row-major tensor of int32 on the device (doc_ids).
struct I32MemrefArg {
  CUdeviceptr data = 0;
  Shape shape;
};

using ArgValue =
    std::variant<MemrefArg, I32MemrefArg, std::int32_t, std::int64_t, float>;
/// Values by parameter name. Values the kernel does not take are ignored: a
/// caller may hold tensors (e.g. lse) that some kernels do not write.
using ArgBindings = std::map<std::string, ArgValue>;

/// The parameter array cuLaunchKernel takes, built from a kernel's `params`.
/// Each kernel parameter gets an 8-byte slot; 4-byte values sit in the first
/// 4 bytes (the driver copies only as many bytes as the parameter has).
class KernelArgs {
public:
  /// Throws, naming the kernel and parameter, for a missing value or one of
  /// the wrong kind, element type or rank.
  KernelArgs(const KernelSpec &spec, const ArgBindings &bindings);
  KernelArgs(KernelArgs &&other) = default;
  KernelArgs(const KernelArgs &) = delete;
  KernelArgs &operator=(const KernelArgs &) = delete;

  void **pointers() { return slotPointers.data(); }
  std::size_t count() const { return slots.size(); }
  /// The raw 8-byte slot of kernel parameter `index` (after expansion).
  std::uint64_t slot(std::size_t index) const { return slots.at(index); }

private:
  std::vector<std::uint64_t> slots;
  // Into `slots`, whose heap storage does not move when KernelArgs does.
  std::vector<void *> slotPointers;
};

} // namespace fa

#endif // FA_RUNTIME_KERNELARGS_H
