//===- Error.cpp ----------------------------------------------------------===//

#include "fa/runtime/Error.h"

#include "fa/runtime/Driver.h"

namespace fa {

std::string describeCuResult(CUresult result) {
  const char *name = nullptr;
  const char *description = nullptr;
  const DriverApi &cu = driver();
  if (cu.cuGetErrorName(result, &name) != CUDA_SUCCESS)
    return "unknown CUDA error " + std::to_string(static_cast<int>(result));
  cu.cuGetErrorString(result, &description);
  return std::string(name) + ": " + (description ? description : "");
}

void checkCu(CUresult result, const std::string &what) {
  if (result != CUDA_SUCCESS)
    throw Error(what + ": " + describeCuResult(result));
}

} // namespace fa
