//===- KernelArgs.h - Parameters in MLIR's calling convention --*- C++ -*-===//
//
// Kernels lowered by MLIR take each memref as its expanded descriptor. A
// rank-R memref parameter becomes 3 + 2R kernel parameters:
//   allocated pointer (u64), aligned pointer (u64), offset (i64),
//   sizes[R] (i64), strides[R] (i64)
// The runtime passes both pointers as the tensor's address and offset 0; the
// strides are row-major (contiguous), or the MemrefArg's element strides for
// a parameter the manifest marks "strided" (the kernel reads the strides from
// the descriptor: a view such as one head of a fused QKV buffer). Scalars
// (i32, i64, f32) are one parameter each. Memrefs of int32 (doc_ids) are
// bound as I32MemrefArg. A TMA tensor map is one 128-byte parameter, bound
// as a TensorMapArg or encoded from the tensor its manifest entry names.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_KERNELARGS_H
#define FA_RUNTIME_KERNELARGS_H

#include "fa/runtime/KernelLibrary.h"
#include "fa/runtime/Tensor.h"
#include "fa/runtime/TensorMap.h"

#include <cuda.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace fa {

/// Element strides of a tensor, one per dimension (outermost first).
using Strides = std::vector<std::int64_t>;

/// A tensor on the device: contiguous row-major, or with `strides` (in
/// elements, one per dimension, the innermost 1) a view whose element
/// [i0, i1, ...] sits at data + sum(i_d * strides[d]) elements. Only a
/// kernel parameter marked "strided" in the manifest takes strides.
struct MemrefArg {
  CUdeviceptr data = 0;
  DType dtype = DType::F32;
  Shape shape;
  Strides strides = {}; // Empty: row-major.
};

/// A contiguous row-major tensor of int32 on the device (doc_ids).
struct I32MemrefArg {
  CUdeviceptr data = 0;
  Shape shape;
};

/// A TMA tensor map (encodeTiledTensorMap, TensorMap.h), passed by value:
/// the kernel's 128-byte __grid_constant__ parameter.
struct TensorMapArg {
  CUtensorMap map;
};

/// The tensor map that tensor-map parameter `param`, whose manifest entry
/// names a `tensor`, reads `tensor` (that parameter's value) through: its
/// address, dtype, shape and element strides (empty: row-major, as
/// MemrefArg's), with the param's box and swizzle. Throws, naming both
/// parameters, for a param that names no tensor, for a tensor of another
/// dtype or rank than the param's, and for a map TMA cannot take
/// (checkTiledTensorMapSpec: alignment, 16-byte strides, box limits). Needs
/// no GPU; encodeTiledTensorMap encodes the result.
TiledTensorMapSpec tensorMapSpecOf(const KernelParam &param,
                                   const MemrefArg &tensor);

using ArgValue = std::variant<MemrefArg, I32MemrefArg, std::int32_t,
                              std::int64_t, float, TensorMapArg>;
/// Values by parameter name. Values the kernel does not take are ignored: a
/// caller may hold tensors (e.g. lse) that some kernels do not write.
using ArgBindings = std::map<std::string, ArgValue>;

/// The parameter array cuLaunchKernel takes, built from a kernel's `params`.
/// A tensor-map parameter is bound by its own name (a TensorMapArg) or,
/// when the manifest names its `tensor` and the caller binds no map, encoded
/// here from the binding of that tensor (tensorMapSpecOf, then
/// encodeTiledTensorMap: the encoding needs the driver, not a GPU context).
/// Each kernel parameter gets an 8-byte slot; 4-byte values sit in the first
/// 4 bytes (the driver copies only as many bytes as the parameter has). A
/// tensor map is the exception: its pointer is to its own 128 bytes, and its
/// slot is an unused placeholder.
///
/// A caller that launches one kernel many times with new pointers may pack
/// once, from placeholder pointers, then per launch overwrite only the slots
/// that change (slotOf, setSlot) in the arguments or in a copy of them. A
/// tensor map encoded from its tensor (a derived map) holds that tensor's
/// address, shape and strides, which patching the tensor's slots does not
/// change: such a caller calls refreshTensorMaps after patching, which
/// re-encodes each derived map whose tensor's aligned-pointer slot moved
/// (shape and strides stay as packed). A derived map whose tensor is packed
/// with a null pointer (a placeholder) is checked (tensorMapSpecOf) but not
/// encoded: its 128 bytes stay zero until refreshTensorMaps finds the
/// pointer set. pointers(), which Kernel::launch passes to the driver,
/// throws while a derived map does not map its tensor's current pointer
/// (never encoded, or not refreshed since a patch), so no kernel is
/// launched with a placeholder's map or a stale one.
class KernelArgs {
public:
  /// Throws, naming the kernel and parameter, for a missing value or one of
  /// the wrong kind, element type or rank, and for strides given to a
  /// parameter that is not "strided", strides of the wrong count, an
  /// innermost stride other than 1 or a stride below 1; for a tensor map
  /// encoded from its tensor, also for what tensorMapSpecOf and
  /// checkTiledTensorMapSpec refuse, and for the driver's errors.
  KernelArgs(const KernelSpec &spec, const ArgBindings &bindings);
  KernelArgs(KernelArgs &&other) = default;
  KernelArgs &operator=(KernelArgs &&other) = default;
  /// A copy's pointers() point into the copy's own slots.
  KernelArgs(const KernelArgs &other);
  KernelArgs &operator=(const KernelArgs &other);

  /// The parameter array for cuLaunchKernel. Throws, naming the kernel and
  /// the parameter, while a derived tensor map is not current (ready()).
  void **pointers() {
    if (!derivedMaps.empty())
      requireCurrentTensorMaps();
    return slotPointers.data();
  }
  std::size_t count() const { return slots.size(); }
  /// The raw 8-byte slot of kernel parameter `index` (after expansion).
  std::uint64_t slot(std::size_t index) const { return slots.at(index); }

  /// The first slot of parameter `param`: a scalar's only slot, a memref's
  /// allocated pointer (its aligned pointer is the next slot, its offset,
  /// sizes and strides follow). Throws, naming the kernel, when the kernel
  /// takes no such parameter.
  std::size_t slotOf(const std::string &param) const;
  /// slotOf, or nothing when the kernel takes no parameter `param`.
  std::optional<std::size_t> findSlot(const std::string &param) const;
  /// Overwrites slot `index` with `value` (slotValue's bits); throws
  /// std::out_of_range past count().
  void setSlot(std::size_t index, std::uint64_t value) {
    slots.at(index) = value;
  }

  /// Re-encodes every derived tensor map whose tensor's aligned pointer
  /// (the slot after slotOf(tensor)) is not the address it was encoded
  /// with, or that was never encoded, from the spec it was packed from with
  /// that pointer; a map whose pointer is 0 is zeroed and left unencoded.
  /// Maps already current cost a comparison. Throws, naming the kernel and
  /// both parameters, for an address TMA refuses (not a multiple of 16
  /// bytes) and for the driver's errors; that map is then left zeroed and
  /// unencoded, and the next call retries it. Needs the driver (not a
  /// context) only when it encodes.
  void refreshTensorMaps();
  /// Whether every derived tensor map maps its tensor's current pointer:
  /// what pointers() requires.
  bool ready() const;
  /// The derived tensor-map parameters that are not current (in parameter
  /// order): those refreshTensorMaps would encode or zero, and pointers()
  /// refuses.
  std::vector<std::string> staleTensorMaps() const;

  /// The slot that holds `value` (an i32, i64, f32 or device pointer) as
  /// the constructor packs it: its bytes first, the rest zero.
  template <typename T> static std::uint64_t slotValue(T value) {
    static_assert(sizeof(T) <= sizeof(std::uint64_t), "slots are 8 bytes");
    std::uint64_t slot = 0;
    std::memcpy(&slot, &value, sizeof(T));
    return slot;
  }

  /// A tensor map KernelArgs encodes from the binding of its tensor.
  struct DerivedTensorMap {
    std::string param;   // The tensor-map parameter, e.g. "k_tma".
    std::string tensor;  // The parameter it maps, e.g. "k".
    std::size_t map = 0; // Index into tensorMaps.
    // What it is encoded from; spec.data is the address encoded (when
    // `encoded`).
    TiledTensorMapSpec spec;
    // The slot of the tensor's aligned pointer; none when the kernel takes
    // no parameter `tensor` (then patching cannot move it).
    std::optional<std::size_t> sourceSlot;
    bool encoded = false; // False: tensorMaps[map] is all zero.
  };

private:
  void pointAtSlots();
  /// The address `map`'s tensor has now: its source slot's, or (without
  /// one) the address it was packed with.
  CUdeviceptr currentAddress(const DerivedTensorMap &map) const;
  bool isCurrent(const DerivedTensorMap &map) const;
  void requireCurrentTensorMaps() const;

  std::string kernelName;
  std::vector<std::uint64_t> slots;
  // Into `slots`, whose heap storage does not move when KernelArgs does.
  std::vector<void *> slotPointers;
  // Each parameter's name and first slot, in the kernel's order.
  std::vector<std::pair<std::string, std::size_t>> paramSlots;
  // The tensor maps, by value; a tensor map's slot in `slots` is a
  // placeholder whose pointer points here instead (128 bytes, not 8).
  std::vector<CUtensorMap> tensorMaps;
  // (slot, index into tensorMaps) of each tensor-map parameter.
  std::vector<std::pair<std::size_t, std::size_t>> tensorMapSlots;
  // The tensor maps encoded from their tensors, in parameter order; indices
  // only, so copies stay consistent.
  std::vector<DerivedTensorMap> derivedMaps;
};

} // namespace fa

#endif // FA_RUNTIME_KERNELARGS_H
