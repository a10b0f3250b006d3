//===- Tensor.cpp ---------------------------------------------------------===//

#include "fa/runtime/Tensor.h"

namespace fa {

std::string formatShape(const Shape &shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::int64_t elementCount(const Shape &shape) {
  std::int64_t count = 1;
  for (std::int64_t extent : shape)
    count *= extent;
  return count;
}

Shape rowMajorStrides(const Shape &shape) {
  Shape strides(shape.size());
  std::int64_t stride = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

std::size_t tensorBytes(const Shape &shape, DType dtype) {
  return static_cast<std::size_t>(elementCount(shape)) * dtypeBytes(dtype);
}

HostTensor download(const DeviceBuffer &buffer, const Shape &shape,
                    DType dtype) {
  return {shape, decode(buffer.download(), dtype)};
}

HostTensor randomTensor(const Shape &shape, DType dtype, std::mt19937_64 &rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(static_cast<std::size_t>(elementCount(shape)));
  for (float &value : values)
    value = normal(rng);
  roundToDType(values, dtype);
  return {shape, std::move(values)};
}

} // namespace fa
