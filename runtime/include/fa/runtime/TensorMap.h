//===- TensorMap.h - TMA tensor maps of row-major tensors -------*- C++ -*-===//
//
// A kernel's TMA loads (fa.ring_produce) read a tensor through a tensor map:
// CUDA's 128-byte CUtensorMap, encoded on the host by cuTensorMapEncodeTiled
// and passed to the kernel by value (a "tensormap" parameter, KernelArgs.h).
// It describes the tensor (address, element type, shape, strides) and the
// box one load copies; box elements outside the tensor arrive as zeros
// (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: zero fill), which is how a kernel
// reads a sequence's tail without predication.
//
// Shapes, strides and boxes here are outermost first, like Shape and the
// kernels' memrefs; cuTensorMapEncodeTiled takes them innermost first, in
// bytes for the strides, and encodeTiledTensorMap reverses them.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_TENSORMAP_H
#define FA_RUNTIME_TENSORMAP_H

#include "fa/runtime/DType.h"
#include "fa/runtime/Tensor.h"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace fa {

/// cuTensorMapEncodeTiled's limits on the rank and on each box dimension
/// (CUDA driver API documentation).
inline constexpr std::size_t kMaxTensorMapRank = 5;
inline constexpr std::int64_t kMaxTensorMapBoxDim = 256;

/// How TMA lays a box row out in shared memory: as is, or XOR-swizzled in
/// 32-, 64- or 128-byte spans (the box row may be at most that wide). The
/// kernel's `!nvgpu.tensormap.descriptor` must say the same.
enum class TensorMapSwizzle { None, Bytes32, Bytes64, Bytes128 };

/// "none", "32b", "64b" or "128b".
const char *tensorMapSwizzleName(TensorMapSwizzle swizzle);
/// The swizzle tensorMapSwizzleName calls `name`, or nothing.
std::optional<TensorMapSwizzle> tensorMapSwizzleNamed(const std::string &name);

/// A tiled tensor map of a tensor on the device.
struct TiledTensorMapSpec {
  CUdeviceptr data = 0;
  DType dtype = DType::BF16;
  /// Elements per dimension, outermost first (1 to 5 dimensions).
  Shape shape;
  /// Element strides per dimension, outermost first, the innermost 1; empty
  /// for row-major. Each other stride must be a multiple of 16 bytes.
  Shape strides;
  /// The box one TMA load copies, outermost first: each dimension 1 to 256
  /// elements, the innermost a multiple of 16 bytes.
  Shape box;
  TensorMapSwizzle swizzle = TensorMapSwizzle::None;
};

/// "bf16 tensor at 0x7f00 of shape [1000, 64], strides [64, 1], box
/// [64, 64], swizzle none": every argument, for error messages.
std::string describeTensorMap(const TiledTensorMapSpec &spec);

/// Throws Error, naming the spec (describeTensorMap) and the rule, for what
/// cuTensorMapEncodeTiled would refuse: rank, sizes, alignment of the
/// address (16 bytes) and strides (16 bytes), box limits, swizzle span.
/// Needs no GPU.
void checkTiledTensorMapSpec(const TiledTensorMapSpec &spec);

/// Checks the spec, then encodes it with cuTensorMapEncodeTiled (no L2
/// promotion, zero fill out of bounds, every element stride 1). Throws
/// Error naming the spec and the driver's error.
CUtensorMap encodeTiledTensorMap(const TiledTensorMapSpec &spec);

} // namespace fa

#endif // FA_RUNTIME_TENSORMAP_H
