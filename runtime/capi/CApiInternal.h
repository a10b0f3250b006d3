//===- CApiInternal.h - What the C API's files share ------------*- C++ -*-===//
//
// The objects behind fa.h's handles and the two pieces every entry point
// uses: `guard`, which turns the runtime's exceptions into an fa_status and
// this thread's last error, and `ContextScope`, which makes the library's
// context current for a call without disturbing the caller's.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_CAPI_CAPIINTERNAL_H
#define FA_RUNTIME_CAPI_CAPIINTERNAL_H

#include "fa/runtime/Context.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/Kernel.h"
#include "fa/runtime/KernelLibrary.h"
#include "fa/runtime/TuningCache.h"

// The library is built with hidden visibility; fa.h's functions, declared
// here with default visibility, are its exports (fa_runtime.map).
#pragma GCC visibility push(default)
#include "fa/runtime/fa.h"
#pragma GCC visibility pop

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace fa::capi {

/// An error whose fa_status the runtime's exception type cannot tell (an
/// fa::Error may be a bad manifest or a failed launch).
class StatusError : public Error {
public:
  StatusError(fa_status status, const std::string &message)
      : Error(message), errorStatus(status) {}
  fa_status status() const { return errorStatus; }

private:
  fa_status errorStatus;
};

/// Runs `step`, rethrowing an fa::Error it throws (but not a StatusError or
/// NoDeviceError, which already say what they are) as a StatusError of
/// `status`.
template <typename Step>
auto withStatus(fa_status status, Step &&step) -> decltype(step()) {
  try {
    return step();
  } catch (const StatusError &) {
    throw;
  } catch (const NoDeviceError &) {
    throw;
  } catch (const Error &error) {
    throw StatusError(status, error.what());
  }
}

/// Throws FA_ERROR_INVALID_ARGUMENT "<what> is null" when `pointer` is null.
void requireNonNull(const void *pointer, const char *what);

/// Runs `body` for an entry point: clears this thread's last error, and
/// maps what it throws to a status, the message "<doing>: <what()>"
/// becoming the last error. `doing` is called only on failure, so building
/// it costs nothing on success. An fa::Error that is neither a StatusError
/// nor a NoDeviceError gets `fallback`.
fa_status guard(const std::function<std::string()> &doing, fa_status fallback,
                const std::function<void()> &body);

/// Throws FA_ERROR_INVALID_ARGUMENT "<prefix><name> is 0" for the first
/// null device pointer.
void requirePointers(
    const char *prefix,
    std::initializer_list<std::pair<const char *, CUdeviceptr>> pointers);

/// The runtime's DType; throws FA_ERROR_INVALID_ARGUMENT for a value outside
/// fa_dtype.
DType dtypeOf(fa_dtype dtype);

/// "bf16", or "dtype 7" for a value outside fa_dtype (for messages).
std::string dtypeLabel(fa_dtype dtype);

/// Makes `context` current on this thread for the scope's lifetime if it is
/// not already, then restores the caller's (which may be none).
class ContextScope {
public:
  explicit ContextScope(CUcontext context);
  ~ContextScope();
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;

private:
  bool pushed = false;
};

} // namespace fa::capi

/// An opened kernel library: its manifest, tuning cache, device and
/// retained primary context, and the kernels loaded so far.
struct fa_library_t {
  fa::KernelLibrary library;
  std::optional<fa::TuningCache> cache;
  fa::DeviceInfo device;
  CUdevice deviceHandle = 0;
  CUcontext context = nullptr;

  /// The kernel `spec` loaded into the library's context, loading it on
  /// first use. The caller holds a ContextScope of `context`. The kernel
  /// lives as long as the library.
  const fa::Kernel &kernel(const fa::KernelSpec &spec);

  /// Unloads every kernel (in the library's context).
  void unloadKernels();

private:
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<fa::Kernel>> kernels;
};

#endif // FA_RUNTIME_CAPI_CAPIINTERNAL_H
