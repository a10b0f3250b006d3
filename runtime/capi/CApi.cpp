//===- CApi.cpp - Status, last error and the library handle ---------------===//
//
// fa.h's entry points that are not about one op: the status names, this
// thread's last error, and opening and closing a kernel library (manifest,
// tuning cache, device, primary context, the kernels loaded so far); and
// what the ops' launches share (guard, ContextScope, PreparedLaunches).
//
//===----------------------------------------------------------------------===//

#include "CApiInternal.h"

#include "fa/runtime/Attention.h"
#include "fa/runtime/Driver.h"

#include <exception>
#include <new>
#include <string_view>
#include <variant>

using namespace fa;
using namespace fa::capi;

namespace {

/// What fa_last_error() returns: per thread, so that concurrent callers
/// each see their own failure.
thread_local std::string lastError;

/// The tuning cache fa_library_open's `tuning_cache` asks for: NULL the
/// library's own if present, "" none, else that file (which must exist).
std::optional<TuningCache> openTuningCache(const std::string &kernelDir,
                                           const char *tuningCache) {
  if (!tuningCache)
    return TuningCache::loadIfPresent(defaultTuningCachePath(kernelDir));
  if (*tuningCache == '\0')
    return std::nullopt;
  return TuningCache::load(tuningCache);
}

/// Finds CUDA device `ordinal` and retains its primary context. Throws
/// NoDeviceError without a driver or GPU, and FA_ERROR_NO_DEVICE for an
/// ordinal the driver does not have.
void openDevice(fa_library_t &library, int ordinal) {
  const DriverApi &cu = driver();
  int count = 0;
  checkCu(cu.cuDeviceGetCount(&count), "counting CUDA devices");
  if (ordinal >= count)
    throw StatusError(FA_ERROR_NO_DEVICE,
                      "there is no CUDA device " + std::to_string(ordinal) +
                          "; the driver sees " + std::to_string(count));
  library.device = listDevices().at(static_cast<std::size_t>(ordinal));
  checkCu(cu.cuDeviceGet(&library.deviceHandle, ordinal),
          "opening CUDA device " + std::to_string(ordinal));
  checkCu(cu.cuDevicePrimaryCtxRetain(&library.context, library.deviceHandle),
          "retaining the primary context of CUDA device " +
              std::to_string(ordinal));
}

} // namespace

namespace fa::capi {

void requireNonNull(const void *pointer, const char *what) {
  if (!pointer)
    throw StatusError(FA_ERROR_INVALID_ARGUMENT,
                      std::string(what) + " is null");
}

void clearLastError() { lastError.clear(); }

fa_status reportFailure(fa_status fallback,
                        std::string (*describe)(const void *doing),
                        const void *doing) noexcept {
  fa_status status = FA_ERROR_INTERNAL;
  // Points into the exception in flight, which lives until the caller's
  // handler ends.
  const char *message = "an unknown exception";
  try {
    throw;
  } catch (const StatusError &error) {
    status = error.status();
    message = error.what();
  } catch (const NoDeviceError &error) {
    status = FA_ERROR_NO_DEVICE;
    message = error.what();
  } catch (const Error &error) {
    status = fallback;
    message = error.what();
  } catch (const std::bad_alloc &) {
    message = "out of host memory";
  } catch (const std::exception &error) {
    message = error.what();
  } catch (...) {
  }
  // Describing what was being done may itself throw (bad_alloc): the status
  // must still reach the caller.
  try {
    lastError = describe(doing) + ": " + message;
  } catch (...) {
    try {
      lastError = message;
    } catch (...) {
      lastError.clear();
    }
  }
  return status;
}

void requirePointers(
    const char *prefix,
    std::initializer_list<std::pair<const char *, CUdeviceptr>> pointers) {
  for (const auto &[name, pointer] : pointers)
    if (!pointer)
      throw StatusError(FA_ERROR_INVALID_ARGUMENT,
                        std::string(prefix) + name + " is 0");
}

void requireWorkspace(CUdeviceptr workspace, std::size_t bytes,
                      std::size_t needed, const char *launch,
                      const char *sizeQuery) {
  if (bytes < needed)
    throw StatusError(FA_ERROR_WORKSPACE,
                      "the workspace has " + std::to_string(bytes) +
                          " bytes; " + launch + " needs " +
                          std::to_string(needed) + " (" + sizeQuery + ")");
  if (!workspace || workspace % kWorkspaceAlignment != 0)
    throw StatusError(FA_ERROR_INVALID_ARGUMENT,
                      "the workspace must be a device pointer aligned to " +
                          std::to_string(kWorkspaceAlignment) + " bytes");
}

std::string dtypeLabel(fa_dtype dtype) {
  switch (dtype) {
  case FA_DTYPE_F32:
  case FA_DTYPE_F16:
  case FA_DTYPE_BF16:
    return dtypeName(dtypeOf(dtype));
  }
  return "dtype " + std::to_string(static_cast<int>(dtype));
}

DType dtypeOf(fa_dtype dtype) {
  switch (dtype) {
  case FA_DTYPE_F32:
    return DType::F32;
  case FA_DTYPE_F16:
    return DType::F16;
  case FA_DTYPE_BF16:
    return DType::BF16;
  }
  throw StatusError(FA_ERROR_INVALID_ARGUMENT,
                    "dtype " + std::to_string(static_cast<int>(dtype)) +
                        " is not an fa_dtype (0 f32, 1 f16, 2 bf16)");
}

ContextScope::ContextScope(CUcontext context) {
  const DriverApi &cu = driver();
  CUcontext current = nullptr;
  checkCu(cu.cuCtxGetCurrent(&current), "querying the current CUDA context");
  // The caller's context may already be ours (PyTorch's primary context):
  // then there is nothing to push or restore.
  if (current == context)
    return;
  checkCu(cu.cuCtxPushCurrent(context),
          "making the library's CUDA context current");
  pushed = true;
}

ContextScope::~ContextScope() {
  if (!pushed)
    return;
  // Popping what we pushed fails only if the caller changed contexts under
  // us, which a destructor cannot report.
  CUcontext popped = nullptr;
  driver().cuCtxPopCurrent(&popped);
}

void PreparedLaunches::add(const Kernel &kernel, const Dim3 &grid,
                           const ArgBindings &bindings) {
  Prepared prepared;
  prepared.kernel = &kernel;
  prepared.grid = grid;
  try {
    prepared.args.emplace(kernel.spec(), bindings);
    if (takesTileCounter(kernel.spec()))
      prepared.tileCounter = valueIndex("tile_counter", kernel.spec());
    if (takesDqSemaphores(kernel.spec())) {
      prepared.dqSemaphores = valueIndex("dq_semaphores", kernel.spec());
      // KernelArgs took the binding: an i32 memref of the kernel's rank.
      prepared.dqSemaphoreBytes =
          static_cast<std::size_t>(elementCount(
              std::get<I32MemrefArg>(bindings.at("dq_semaphores")).shape)) *
          sizeof(std::int32_t);
    }
  } catch (const Error &) {
    prepared.error = std::current_exception();
  }
  if (prepared.args) {
    for (std::size_t value = 0; value < valueCount; ++value) {
      std::optional<std::size_t> slot =
          prepared.args->findSlot(values[value].param);
      if (!slot)
        continue;
      auto index = static_cast<std::uint32_t>(value);
      prepared.patches.push_back({static_cast<std::uint32_t>(*slot), index});
      // A memref's aligned pointer follows its allocated one.
      if (values[value].pointer)
        prepared.patches.push_back(
            {static_cast<std::uint32_t>(*slot + 1), index});
    }
    prepared.scratch = prepared.args;
  }
  kernels.push_back(std::move(prepared));
}

std::uint32_t PreparedLaunches::valueIndex(const char *param,
                                           const KernelSpec &kernel) const {
  for (std::size_t value = 0; value < valueCount; ++value)
    if (std::string_view(values[value].param) == param)
      return static_cast<std::uint32_t>(value);
  throw Error("kernel " + kernel.name + " takes " + param +
              ", which no launch of this plan gives");
}

void PreparedLaunches::patch(const Prepared &prepared, KernelArgs &args,
                             const std::uint64_t *values) {
  for (const Patch &patch : prepared.patches)
    args.setSlot(patch.slot, values[patch.value]);
  // Tensor maps encoded from a tensor (k_tma of k) hold its address: those
  // whose tensor moved are encoded anew. The plan checked everything else
  // about them, so what the encoding refuses is the caller's pointer (one
  // not a multiple of 16 bytes).
  withStatus(FA_ERROR_INVALID_ARGUMENT, [&] { args.refreshTensorMaps(); });
}

void PreparedLaunches::launchOne(const Prepared &prepared, KernelArgs &args,
                                 const std::uint64_t *values, CUstream stream) {
  // The kernel counts its tiles from zero and never resets the counter.
  if (prepared.tileCounter)
    zeroTileCounter(values[*prepared.tileCounter], prepared.kernel->spec(),
                    stream);
  // A dkdv kernel that sums dQ counts its semaphores up from zero.
  if (prepared.dqSemaphores)
    zeroDqSemaphores(values[*prepared.dqSemaphores], prepared.dqSemaphoreBytes,
                     prepared.kernel->spec(), stream);
  prepared.kernel->launch(prepared.grid, args, stream);
}

void PreparedLaunches::launch(CUcontext context, const std::uint64_t *values,
                              CUstream stream) {
  for (const Prepared &prepared : kernels)
    if (prepared.error)
      std::rethrow_exception(prepared.error);
  ContextScope scope(context);
  // Every kernel's arguments are patched before the first launch, so that
  // a pointer a tensor map refuses fails the call with nothing launched.
  std::unique_lock<std::mutex> lock(mutex, std::try_to_lock);
  if (lock.owns_lock()) {
    for (Prepared &prepared : kernels)
      patch(prepared, *prepared.scratch, values);
    for (Prepared &prepared : kernels)
      launchOne(prepared, *prepared.scratch, values, stream);
    return;
  }
  // Another thread is launching this plan: patch copies instead of waiting
  // for it (their tensor maps, packed from placeholders, are encoded here).
  std::vector<KernelArgs> copies;
  copies.reserve(kernels.size());
  for (const Prepared &prepared : kernels) {
    copies.push_back(*prepared.args);
    patch(prepared, copies.back(), values);
  }
  for (std::size_t i = 0; i < kernels.size(); ++i)
    launchOne(kernels[i], copies[i], values, stream);
}

} // namespace fa::capi

const Kernel &fa_library_t::kernel(const KernelSpec &spec) {
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Kernel> &loaded = kernels[spec.name];
  // Loading JIT-compiles the PTX; holding the lock meanwhile keeps two
  // plans from compiling the same kernel twice.
  if (!loaded)
    loaded = std::make_unique<Kernel>(spec, device);
  return *loaded;
}

void fa_library_t::unloadKernels() {
  std::lock_guard<std::mutex> lock(mutex);
  kernels.clear();
}

extern "C" {

int fa_api_version(void) { return FA_API_VERSION; }

const char *fa_last_error(void) { return lastError.c_str(); }

const char *fa_status_name(fa_status status) {
  switch (status) {
  case FA_SUCCESS:
    return "FA_SUCCESS";
  case FA_ERROR_INVALID_ARGUMENT:
    return "FA_ERROR_INVALID_ARGUMENT";
  case FA_ERROR_UNSUPPORTED:
    return "FA_ERROR_UNSUPPORTED";
  case FA_ERROR_LIBRARY:
    return "FA_ERROR_LIBRARY";
  case FA_ERROR_NO_DEVICE:
    return "FA_ERROR_NO_DEVICE";
  case FA_ERROR_CUDA:
    return "FA_ERROR_CUDA";
  case FA_ERROR_WORKSPACE:
    return "FA_ERROR_WORKSPACE";
  case FA_ERROR_INTERNAL:
    return "FA_ERROR_INTERNAL";
  }
  return "FA_STATUS_UNKNOWN";
}

fa_status fa_library_open(const char *kernel_dir, int device_ordinal,
                          const char *tuning_cache, fa_library *library) {
  auto doing = [&] {
    return std::string("opening the kernel library ") +
           (kernel_dir ? kernel_dir : "(null)") + " for CUDA device " +
           std::to_string(device_ordinal);
  };
  return guard(doing, FA_ERROR_CUDA, [&] {
    requireNonNull(library, "library (where the handle goes)");
    *library = nullptr;
    requireNonNull(kernel_dir, "kernel_dir");
    if (device_ordinal < 0)
      throw StatusError(FA_ERROR_INVALID_ARGUMENT,
                        "device_ordinal must be >= 0, got " +
                            std::to_string(device_ordinal));
    auto opened = std::make_unique<fa_library_t>();
    // The manifest and cache first: a bad directory fails the same way with
    // or without a GPU.
    opened->library = withStatus(
        FA_ERROR_LIBRARY, [&] { return KernelLibrary::load(kernel_dir); });
    opened->cache = withStatus(FA_ERROR_LIBRARY, [&] {
      return openTuningCache(kernel_dir, tuning_cache);
    });
    openDevice(*opened, device_ordinal);
    *library = opened.release();
  });
}

void fa_library_close(fa_library library) {
  if (!library)
    return;
  // Nothing to return an error through: a failure only sets the last error.
  guard([] { return std::string("closing a kernel library"); }, FA_ERROR_CUDA,
        [&] {
          // Modules unload from the context they were loaded into.
          ContextScope scope(library->context);
          library->unloadKernels();
        });
  driver().cuDevicePrimaryCtxRelease(library->deviceHandle);
  delete library;
}

} // extern "C"
