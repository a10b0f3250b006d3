# Finds the CUDA toolkit (driver API, cuBLASLt, NCCL, nvtx3) for the runtime and fa-run.
if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit REQUIRED)
