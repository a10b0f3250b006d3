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
#include "fa/runtime/KernelArgs.h"
#include "fa/runtime/KernelLibrary.h"
#include "fa/runtime/TuningCache.h"

// The library is built with hidden visibility; fa.h's functions, declared
// here with default visibility, are its exports (fa_runtime.map).
#pragma GCC visibility push(default)
#include "fa/runtime/fa.h"
#pragma GCC visibility pop

#include <cstdint>
#include <exception>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

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

/// Clears this thread's last error (every entry point's first step).
void clearLastError();

/// What guard does when its body threw; called only from inside a catch
/// handler, it rethrows the exception in flight to tell its kind, sets the
/// last error to "<describe(doing)>: <what()>" and returns the status.
fa_status reportFailure(fa_status fallback,
                        std::string (*describe)(const void *doing),
                        const void *doing) noexcept;

/// Runs `body` for an entry point: clears this thread's last error, and
/// maps what it throws to a status, the message "<doing()>: <what()>"
/// becoming the last error. `doing` is called only on failure, so building
/// its text costs nothing on success, nor does calling `body` (no
/// std::function, no allocation). An fa::Error that is neither a
/// StatusError nor a NoDeviceError gets `fallback`.
template <typename Doing, typename Body>
fa_status guard(const Doing &doing, fa_status fallback, const Body &body) {
  clearLastError();
  try {
    body();
    return FA_SUCCESS;
  } catch (...) {
    return reportFailure(
        fallback,
        [](const void *what) -> std::string {
          return (*static_cast<const Doing *>(what))();
        },
        &doing);
  }
}

/// Throws FA_ERROR_INVALID_ARGUMENT "<prefix><name> is 0" for the first
/// null device pointer.
void requirePointers(
    const char *prefix,
    std::initializer_list<std::pair<const char *, CUdeviceptr>> pointers);

/// The alignment fa.h asks of a workspace.
constexpr std::size_t kWorkspaceAlignment = 256;

/// Throws FA_ERROR_WORKSPACE when the caller's `bytes` are fewer than
/// `needed` by `launch` ("the backward"; naming `sizeQuery`, the function
/// that tells the size), and FA_ERROR_INVALID_ARGUMENT for a null or
/// misaligned workspace.
void requireWorkspace(CUdeviceptr workspace, std::size_t bytes,
                      std::size_t needed, const char *launch,
                      const char *sizeQuery);

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

/// A value a launch gets per call, by the kernel parameter it binds: a
/// device pointer (a memref's allocated and aligned pointer slots) or a
/// scalar (its one slot).
struct PerCallValue {
  const char *param;
  bool pointer;
};

/// Kernels launched one after the other on one stream, their arguments
/// packed once at plan creation from bindings whose per-call values are
/// placeholders, with the slots each per-call value goes to. A launch then
/// only writes those slots and launches: no bindings, no allocation. A
/// tensor map a kernel takes of one of its tensors (KernelArgs' derived
/// maps, packed unencoded from the null placeholder) is encoded by the
/// launch when the tensor's pointer differs from the last launch's
/// (KernelArgs::refreshTensorMaps): a host-side cuTensorMapEncodeTiled, no
/// allocation.
///
/// A kernel that takes a tile counter (takesTileCounter, Attention.h) gets
/// the per-call pointer "tile_counter" as its counter, and one that takes
/// dq_semaphores (takesDqSemaphores) the per-call pointer "dq_semaphores"
/// (as many bytes as its binding's shape): each launch zeroes them on the
/// stream right before that kernel.
///
/// Plans may launch from several threads at once: a launch patches the
/// plan's own scratch copy of the arguments under a mutex and, when another
/// thread holds it, a copy of its own of the (unchanging) packed arguments.
class PreparedLaunches {
public:
  /// `values[i]` is what launch's `values[i]` binds; `values` must outlive
  /// this object (a static table).
  PreparedLaunches(const PerCallValue *values, std::size_t valueCount)
      : values(values), valueCount(valueCount) {}
  PreparedLaunches(const PreparedLaunches &) = delete;
  PreparedLaunches &operator=(const PreparedLaunches &) = delete;

  /// Appends `kernel`, launched on `grid`, its arguments packed from
  /// `bindings` (the per-call values' placeholders among them). A packing
  /// error (fa::Error: a parameter without a value or of another kind, a
  /// tile counter or dq_semaphores that is malformed or no per-call value)
  /// is kept and
  /// thrown by every launch, as packing at each launch would.
  void add(const Kernel &kernel, const Dim3 &grid, const ArgBindings &bindings);

  /// Launches every kernel, in order, on `stream` with `values` (one slot's
  /// bits per PerCallValue: KernelArgs::slotValue) written into their
  /// slots and their derived tensor maps refreshed, `context` current; a
  /// kernel's tile counter is zeroed on `stream` right before it.
  /// Throws the first kernel's packing error before making the context
  /// current or launching anything, and a pointer a tensor map refuses
  /// (FA_ERROR_INVALID_ARGUMENT) before launching anything.
  void launch(CUcontext context, const std::uint64_t *values, CUstream stream);

private:
  struct Patch {
    std::uint32_t slot;
    std::uint32_t value; // Index into launch's `values`.
  };
  struct Prepared {
    const Kernel *kernel = nullptr;
    Dim3 grid;
    std::optional<KernelArgs> args; // Packed; unchanged after add.
    std::exception_ptr error;       // Why there are no args.
    std::vector<Patch> patches;
    /// The per-call value that is the kernel's tile counter, if it takes
    /// one (index into launch's `values`).
    std::optional<std::uint32_t> tileCounter;
    /// The per-call value that is the kernel's dq_semaphores, if it takes
    /// them, and their bytes.
    std::optional<std::uint32_t> dqSemaphores;
    std::size_t dqSemaphoreBytes = 0;
    std::optional<KernelArgs> scratch; // Patched per launch under `mutex`.
  };

  /// The index of the per-call value `param`; throws fa::Error, naming
  /// `kernel`, when there is none.
  std::uint32_t valueIndex(const char *param, const KernelSpec &kernel) const;
  /// Writes `values` into `args`' slots, then refreshes its tensor maps.
  static void patch(const Prepared &prepared, KernelArgs &args,
                    const std::uint64_t *values);
  /// Zeroes the kernel's tile counter and dq_semaphores, if any, then
  /// launches it.
  static void launchOne(const Prepared &prepared, KernelArgs &args,
                        const std::uint64_t *values, CUstream stream);

  const PerCallValue *values;
  std::size_t valueCount;
  std::vector<Prepared> kernels;
  std::mutex mutex; // Guards every kernel's `scratch`.
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
