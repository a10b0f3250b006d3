//===- Launch.cpp ---------------------------------------------------------===//

#include "fa/runtime/Launch.h"

#include "fa/runtime/Driver.h"
#include "fa/runtime/Error.h"

namespace fa {
namespace {

constexpr unsigned kDefaultDynamicSharedLimit = 48 * 1024;

std::string formatDim3(const Dim3 &dims) {
  return "(" + std::to_string(dims.x) + ", " + std::to_string(dims.y) + ", " +
         std::to_string(dims.z) + ")";
}

} // namespace

void allowDynamicSharedMemory(CUfunction function, unsigned bytes,
                              const std::string &kernelName) {
  if (bytes <= kDefaultDynamicSharedLimit)
    return;
  checkCu(driver().cuFuncSetAttribute(
              function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
              static_cast<int>(bytes)),
          "allowing kernel " + kernelName + " " + std::to_string(bytes) +
              " bytes of dynamic shared memory");
}

void launchKernel(CUfunction function, const LaunchConfig &config,
                  CUstream stream, void **args, const std::string &kernelName) {
  const Dim3 &grid = config.grid;
  const Dim3 &block = config.block;
  CUresult result = driver().cuLaunchKernel(
      function, grid.x, grid.y, grid.z, block.x, block.y, block.z,
      config.dynamicSharedBytes, stream, args, nullptr);
  if (result != CUDA_SUCCESS)
    checkCu(result, "launching kernel " + kernelName + " with grid " +
                        formatDim3(grid) + ", block " + formatDim3(block) +
                        " and " + std::to_string(config.dynamicSharedBytes) +
                        " bytes of dynamic shared memory");
}

} // namespace fa
