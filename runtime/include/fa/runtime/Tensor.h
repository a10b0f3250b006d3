//===- Tensor.h - Shapes and host tensors -----------------------*- C++ -*-===//

#ifndef FA_RUNTIME_TENSOR_H
#define FA_RUNTIME_TENSOR_H

#include <cstdint>
#include <string>
#include <vector>

namespace fa {

using Shape = std::vector<std::int64_t>;

/// "[2, 8, 128, 64]".
std::string formatShape(const Shape &shape);
std::int64_t elementCount(const Shape &shape);
/// Contiguous row-major strides, in elements: [.., shape[-1], 1].
Shape rowMajorStrides(const Shape &shape);

/// A contiguous row-major tensor on the host. float holds bf16 and f16 values
/// exactly, so one host type serves every kernel element type.
struct HostTensor {
  Shape shape;
  std::vector<float> values;
};

} // namespace fa

#endif // FA_RUNTIME_TENSOR_H
