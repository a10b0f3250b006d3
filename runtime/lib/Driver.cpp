//===- Driver.cpp - Binding libcuda at run time ---------------------------===//

#include "fa/runtime/Driver.h"

#include "fa/runtime/Error.h"

#include <dlfcn.h>

#include <string>

namespace fa {
namespace {

// Expands macros first, so FA_SYMBOL_NAME(cuMemAlloc) is "cuMemAlloc_v2".
#define FA_SYMBOL_NAME(function) FA_STRINGIFY(function)
#define FA_STRINGIFY(name) #name

void *openLibcuda() {
  // The handle is never closed: the driver stays loaded for the process.
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library)
    throw NoDeviceError(std::string("no CUDA device found: the NVIDIA driver "
                                    "library libcuda.so.1 could not be "
                                    "loaded (") +
                        dlerror() + ")");
  return library;
}

DriverApi loadDriverApi() {
  void *library = openLibcuda();
  DriverApi api;
#define FA_BIND_DRIVER_FUNCTION(function)                                      \
  api.function = reinterpret_cast<decltype(api.function)>(                     \
      dlsym(library, FA_SYMBOL_NAME(function)));                               \
  if (!api.function)                                                           \
    throw Error("binding the CUDA driver API: libcuda.so.1 has no symbol " +   \
                std::string(FA_SYMBOL_NAME(function)) +                        \
                " (the driver is older than CUDA " +                           \
                std::to_string(CUDA_VERSION / 1000) + ")");
  FA_DRIVER_FUNCTIONS(FA_BIND_DRIVER_FUNCTION)
#undef FA_BIND_DRIVER_FUNCTION

  CUresult result = api.cuInit(0);
  if (result == CUDA_ERROR_NO_DEVICE)
    throw NoDeviceError("no CUDA device found (the driver reports none)");
  if (result != CUDA_SUCCESS) {
    const char *name = "unknown error";
    api.cuGetErrorName(result, &name);
    throw Error(std::string("initialising the CUDA driver (cuInit): ") + name);
  }
  return api;
}

} // namespace

const DriverApi &driver() {
  // A throwing initialiser leaves it uninitialised; the next call retries.
  static const DriverApi api = loadDriverApi();
  return api;
}

} // namespace fa
