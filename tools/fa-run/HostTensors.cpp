//===- HostTensors.cpp ----------------------------------------------------===//

#include "HostTensors.h"

#include "fa/runtime/Npy.h"

#include <vector>

namespace fa {

HostTensor randomTensor(const Shape &shape, DType dtype, std::mt19937_64 &rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(static_cast<std::size_t>(elementCount(shape)));
  for (float &value : values)
    value = normal(rng);
  roundToDType(values, dtype);
  return {shape, std::move(values)};
}

HostTensor readInput(const std::string &path, DType dtype) {
  HostTensor tensor = readNpy(path);
  roundToDType(tensor.values, dtype);
  return tensor;
}

void writeOutput(const std::string &path, const HostTensor &tensor,
                 DType dtype) {
  writeNpy(path, tensor, dtype == DType::F16 ? DType::F16 : DType::F32);
}

} // namespace fa
