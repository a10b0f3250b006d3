//===- Driver.h - The CUDA driver API, bound at run time --------*- C++ -*-===//
//
// The runtime calls the CUDA driver API through this table instead of linking
// libcuda: libcuda.so.1 comes with the NVIDIA driver, so a binary linked
// against it would not even start on a machine without one (CI, the compiler
// machine). Binding at first use lets fa-run say "no CUDA device found" and
// lets the unit tests run anywhere.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_DRIVER_H
#define FA_RUNTIME_DRIVER_H

#include <cuda.h>

namespace fa {

// Every driver function the runtime uses. cuda.h #defines most of these names
// to their current versioned symbol (cuMemAlloc -> cuMemAlloc_v2), so the
// table's members and the symbols looked up carry the versioned names.
#define FA_DRIVER_FUNCTIONS(X)                                                 \
  X(cuInit)                                                                    \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceTotalMem)                                                          \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxGetCurrent)                                                           \
  X(cuCtxPushCurrent)                                                          \
  X(cuCtxPopCurrent)                                                           \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncSetAttribute)                                                        \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                               \
  X(cuLaunchKernel)                                                            \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemGetInfo)                                                              \
  X(cuMemcpyHtoD)                                                              \
  X(cuMemcpyDtoH)                                                              \
  X(cuMemcpyDtoD)                                                              \
  X(cuMemsetD8Async)                                                           \
  X(cuStreamCreate)                                                            \
  X(cuStreamCreateWithPriority)                                                \
  X(cuCtxGetStreamPriorityRange)                                               \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamQuery)                                                             \
  X(cuStreamWaitEvent)                                                         \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy)                                                            \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventElapsedTime)                                                        \
  X(cuStreamBeginCapture)                                                      \
  X(cuStreamEndCapture)                                                        \
  X(cuGraphInstantiate)                                                        \
  X(cuGraphGetNodes)                                                           \
  X(cuGraphLaunch)                                                             \
  X(cuGraphExecDestroy)                                                        \
  X(cuGraphDestroy)                                                            \
  X(cuTensorMapEncodeTiled)

struct DriverApi {
#define FA_DRIVER_MEMBER(function) decltype(&::function) function = nullptr;
  FA_DRIVER_FUNCTIONS(FA_DRIVER_MEMBER)
#undef FA_DRIVER_MEMBER
};

/// The driver API, loaded and initialised (cuInit) on first use. Throws
/// NoDeviceError when libcuda.so.1 is missing or the driver sees no GPU.
///
/// This is the one process-wide object in the runtime: it stands in for what
/// the dynamic linker would have bound had we linked libcuda, and it never
/// changes once loaded.
const DriverApi &driver();

} // namespace fa

#endif // FA_RUNTIME_DRIVER_H
