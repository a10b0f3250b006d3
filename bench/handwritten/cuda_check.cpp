//===- cuda_check.cpp -----------------------------------------------------===//

#include "cuda_check.h"

#include "fa/runtime/Error.h"

namespace fa::handwritten {

void checkCuda(cudaError_t result, const std::string &what) {
  if (result != cudaSuccess)
    throw Error(what + ": " + cudaGetErrorName(result) + ": " +
                cudaGetErrorString(result));
}

void checkLaunch(const std::string &kernel) {
  checkCuda(cudaGetLastError(), "launching " + kernel);
}

} // namespace fa::handwritten
