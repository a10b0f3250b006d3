//===- HostTensors.cpp ----------------------------------------------------===//

#include "HostTensors.h"

#include "fa/runtime/Npy.h"

#include <vector>

namespace fa {

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
