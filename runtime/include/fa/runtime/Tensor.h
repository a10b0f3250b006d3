//===- Tensor.h - Shapes and host tensors -----------------------*- C++ -*-===//

#ifndef FA_RUNTIME_TENSOR_H
#define FA_RUNTIME_TENSOR_H

#include "fa/runtime/DType.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace fa {

using Shape = std::vector<std::int64_t>;

/// "[2, 8, 128, 64]".
std::string formatShape(const Shape &shape);
/// The product of the extents; throws when one is negative or the product
/// overflows.
std::int64_t elementCount(const Shape &shape);
/// Contiguous row-major strides, in elements: [.., shape[-1], 1].
Shape rowMajorStrides(const Shape &shape);

/// A contiguous row-major tensor on the host. float holds bf16 and f16 values
/// exactly, so one host type serves every kernel element type.
struct HostTensor {
  Shape shape;
  std::vector<float> values;
};

/// Bytes of a contiguous `shape` tensor of `dtype` elements; throws when that
/// overflows.
std::size_t tensorBytes(const Shape &shape, DType dtype);

/// `buffer`'s contents as a `shape` tensor of `dtype` elements, decoded to
/// float (synchronous).
HostTensor download(const DeviceBuffer &buffer, const Shape &shape,
                    DType dtype);

/// Standard normal values rounded to `dtype`, drawn on the host: the random
/// inputs of fa-handwritten and of fa-run's LayerNorm runs (fa-run's
/// attention runs draw theirs on the device: RandomFill.h).
HostTensor randomTensor(const Shape &shape, DType dtype, std::mt19937_64 &rng);

/// Every byte 0xFF makes every bf16, f16 and f32 element NaN, so outputs
/// filled with it before a run show the elements a kernel left unwritten.
inline constexpr std::uint8_t kNaNBytes = 0xFF;

} // namespace fa

#endif // FA_RUNTIME_TENSOR_H
