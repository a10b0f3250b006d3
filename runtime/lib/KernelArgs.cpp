//===- KernelArgs.cpp -----------------------------------------------------===//

#include "fa/runtime/KernelArgs.h"

#include "fa/runtime/Error.h"
#include "fa/runtime/TensorMap.h"

#include <sstream>

namespace fa {
namespace {

template <typename T> std::uint64_t toSlot(T value) {
  return KernelArgs::slotValue(value);
}

std::string bindingNames(const ArgBindings &bindings) {
  std::string names;
  for (const auto &binding : bindings)
    names += (names.empty() ? "" : ", ") + binding.first;
  return names;
}

/// "parameter 'k_tma' (the tensor map of 'k')", for errors.
std::string describeTensorMapParam(const std::string &param,
                                   const std::string &tensor) {
  return "parameter '" + param + "' (the tensor map of '" + tensor + "')";
}

class ArgPacker {
public:
  ArgPacker(const KernelSpec &spec, std::vector<std::uint64_t> &slots,
            std::vector<CUtensorMap> &tensorMaps,
            std::vector<std::pair<std::size_t, std::size_t>> &tensorMapSlots,
            std::vector<KernelArgs::DerivedTensorMap> &derivedMaps)
      : spec(spec), slots(slots), tensorMaps(tensorMaps),
        tensorMapSlots(tensorMapSlots), derivedMaps(derivedMaps) {}

  /// Packs `param`'s value from `bindings`: its own, or for a tensor map
  /// that names a tensor and has none, one encoded from the tensor's.
  void pack(const KernelParam &param, const ArgBindings &bindings) {
    auto value = bindings.find(param.name);
    if (value != bindings.end())
      return pack(param, value->second);
    if (param.kind == ParamKind::TensorMap && !param.tensor.empty())
      return packDerivedTensorMap(param, bindings);
    fail(param,
         std::string("(") + paramKindName(param.kind) +
             ") has no value; the caller provides: " + bindingNames(bindings));
  }

  void pack(const KernelParam &param, const ArgValue &value) {
    switch (param.kind) {
    case ParamKind::Memref: {
      const MemrefArg &memref = as<MemrefArg>(param, value);
      if (memref.dtype != param.dtype)
        fail(param, std::string("holds ") + dtypeName(param.dtype) +
                        " but was given a " + dtypeName(memref.dtype) +
                        " tensor");
      packMemref(param, memref.data, memref.shape, memref.strides);
      return;
    }
    case ParamKind::I32Memref: {
      const I32MemrefArg &memref = as<I32MemrefArg>(param, value);
      packMemref(param, memref.data, memref.shape);
      return;
    }
    case ParamKind::I32:
      slots.push_back(toSlot(as<std::int32_t>(param, value)));
      return;
    case ParamKind::I64:
      slots.push_back(toSlot(as<std::int64_t>(param, value)));
      return;
    case ParamKind::F32:
      slots.push_back(toSlot(as<float>(param, value)));
      return;
    case ParamKind::TensorMap:
      packTensorMap(as<TensorMapArg>(param, value).map);
      return;
    }
  }

  [[noreturn]] void fail(const KernelParam &param,
                         const std::string &problem) const {
    throw Error("passing arguments to kernel " + spec.name + ": parameter '" +
                param.name + "' " + problem);
  }

private:
  void packTensorMap(const CUtensorMap &map) {
    tensorMapSlots.emplace_back(slots.size(), tensorMaps.size());
    tensorMaps.push_back(map);
    slots.push_back(0); // Its pointer goes to tensorMaps (pointAtSlots).
  }

  /// Tensor-map parameter `param`'s map of the binding of its tensor:
  /// encoded, or for a null pointer (a placeholder) zeroed, recorded in
  /// derivedMaps either way (its source slot found once every parameter is
  /// packed: the tensor may come after the map).
  void packDerivedTensorMap(const KernelParam &param,
                            const ArgBindings &bindings) {
    KernelArgs::DerivedTensorMap derived;
    derived.param = param.name;
    derived.tensor = param.tensor;
    derived.map = tensorMaps.size();
    derived.spec = derivedSpec(param, bindings);
    CUtensorMap map{};
    if (derived.spec.data != 0) {
      map = encodeTiledTensorMap(derived.spec);
      derived.encoded = true;
    }
    packTensorMap(map);
    derivedMaps.push_back(std::move(derived));
  }

  /// What tensor-map parameter `param` encodes from the binding of its
  /// tensor. What tensorMapSpecOf (with TMA's rules) refuses is an error
  /// naming the kernel and both parameters; a null address passes (the
  /// driver's errors, from encodeTiledTensorMap, describe the map).
  TiledTensorMapSpec derivedSpec(const KernelParam &param,
                                 const ArgBindings &bindings) const {
    auto tensor = bindings.find(param.tensor);
    if (tensor == bindings.end())
      fail(param, "(tensormap) has no value, nor has '" + param.tensor +
                      "', the tensor it maps; the caller provides: " +
                      bindingNames(bindings));
    const auto *memref = std::get_if<MemrefArg>(&tensor->second);
    if (!memref)
      fail(param, "maps '" + param.tensor +
                      "', which was given a value other than a tensor");
    try {
      return tensorMapSpecOf(param, *memref);
    } catch (const Error &error) {
      throw Error("passing arguments to kernel " + spec.name + ": " +
                  error.what());
    }
  }

  template <typename T>
  const T &as(const KernelParam &param, const ArgValue &value) const {
    if (const T *typed = std::get_if<T>(&value))
      return *typed;
    fail(param, std::string("is ") + paramKindName(param.kind) +
                    " but was given a value of another kind");
  }

  void packMemref(const KernelParam &param, CUdeviceptr data,
                  const Shape &shape, const Strides &strides = {}) {
    if (static_cast<int>(shape.size()) != param.rank)
      fail(param, "is a rank-" + std::to_string(param.rank) +
                      " memref but was given shape " + formatShape(shape));
    if (!strides.empty())
      checkStrides(param, shape, strides);
    slots.push_back(toSlot(data)); // Allocated pointer.
    slots.push_back(toSlot(data)); // Aligned pointer.
    slots.push_back(toSlot(std::int64_t{0}));
    for (std::int64_t size : shape)
      slots.push_back(toSlot(size));
    for (std::int64_t stride :
         strides.empty() ? rowMajorStrides(shape) : strides)
      slots.push_back(toSlot(stride));
  }

  /// A kernel whose parameter is not strided reads row-major strides of its
  /// own (the manifest's contiguous memrefs), so strides given to it would
  /// be silently ignored; a strided one reads rows whole (innermost stride
  /// 1) at positive strides.
  void checkStrides(const KernelParam &param, const Shape &shape,
                    const Strides &strides) const {
    if (!param.strided)
      fail(param, "takes a contiguous tensor (its manifest entry is not "
                  "\"strided\") but was given strides " +
                      formatShape(strides));
    if (strides.size() != shape.size())
      fail(param, "was given " + std::to_string(strides.size()) + " strides " +
                      formatShape(strides) + " for shape " +
                      formatShape(shape) + "; expected one per dimension");
    if (strides.back() != 1)
      fail(param, "was given strides " + formatShape(strides) +
                      " whose innermost stride is not 1 (the kernel reads "
                      "rows as contiguous elements)");
    for (std::int64_t stride : strides)
      if (stride < 1)
        fail(param, "was given strides " + formatShape(strides) +
                        "; every stride must be at least 1");
  }

  const KernelSpec &spec;
  std::vector<std::uint64_t> &slots;
  std::vector<CUtensorMap> &tensorMaps;
  std::vector<std::pair<std::size_t, std::size_t>> &tensorMapSlots;
  std::vector<KernelArgs::DerivedTensorMap> &derivedMaps;
};

std::string hexAddress(CUdeviceptr address) {
  std::ostringstream text;
  text << "0x" << std::hex << address;
  return text.str();
}

} // namespace

TiledTensorMapSpec tensorMapSpecOf(const KernelParam &param,
                                   const MemrefArg &tensor) {
  if (param.kind != ParamKind::TensorMap || param.tensor.empty())
    throw Error("parameter '" + param.name + "' (" + paramKindName(param.kind) +
                ") is not a tensor map that names the tensor it maps");
  std::string what = describeTensorMapParam(param.name, param.tensor);
  if (tensor.dtype != param.dtype)
    throw Error(what + " holds " + dtypeName(param.dtype) + " but '" +
                param.tensor + "' was given a " + dtypeName(tensor.dtype) +
                " tensor");
  if (tensor.shape.size() != param.box.size())
    throw Error(what + " has the rank-" + std::to_string(param.box.size()) +
                " box " + formatShape(param.box) + " but '" + param.tensor +
                "' was given shape " + formatShape(tensor.shape));
  TiledTensorMapSpec map;
  map.data = tensor.data;
  map.dtype = tensor.dtype;
  map.shape = tensor.shape;
  map.strides = tensor.strides; // Both empty for row-major.
  map.box = param.box;
  map.swizzle = param.swizzle;
  try {
    checkTiledTensorMapSpec(map);
  } catch (const Error &error) {
    throw Error(what + ": " + error.what());
  }
  return map;
}

KernelArgs::KernelArgs(const KernelSpec &spec, const ArgBindings &bindings)
    : kernelName(spec.name) {
  ArgPacker packer(spec, slots, tensorMaps, tensorMapSlots, derivedMaps);
  for (const KernelParam &param : spec.params) {
    paramSlots.emplace_back(param.name, slots.size());
    packer.pack(param, bindings);
  }
  // A memref's aligned pointer is the slot after its allocated one (what
  // the kernel reads; a patch writes both).
  for (DerivedTensorMap &map : derivedMaps)
    if (std::optional<std::size_t> first = findSlot(map.tensor))
      map.sourceSlot = *first + 1;
  pointAtSlots();
}

KernelArgs::KernelArgs(const KernelArgs &other)
    : kernelName(other.kernelName), slots(other.slots),
      paramSlots(other.paramSlots), tensorMaps(other.tensorMaps),
      tensorMapSlots(other.tensorMapSlots), derivedMaps(other.derivedMaps) {
  pointAtSlots();
}

KernelArgs &KernelArgs::operator=(const KernelArgs &other) {
  if (this != &other) {
    kernelName = other.kernelName;
    slots = other.slots;
    paramSlots = other.paramSlots;
    tensorMaps = other.tensorMaps;
    tensorMapSlots = other.tensorMapSlots;
    derivedMaps = other.derivedMaps;
    pointAtSlots();
  }
  return *this;
}

void KernelArgs::pointAtSlots() {
  slotPointers.clear();
  slotPointers.reserve(slots.size());
  for (std::uint64_t &slot : slots)
    slotPointers.push_back(&slot);
  for (auto [slot, map] : tensorMapSlots)
    slotPointers[slot] = &tensorMaps[map];
}

std::optional<std::size_t>
KernelArgs::findSlot(const std::string &param) const {
  for (const auto &[name, first] : paramSlots)
    if (name == param)
      return first;
  return std::nullopt;
}

std::size_t KernelArgs::slotOf(const std::string &param) const {
  if (std::optional<std::size_t> first = findSlot(param))
    return *first;
  throw Error("kernel " + kernelName + " takes no parameter '" + param + "'");
}

CUdeviceptr KernelArgs::currentAddress(const DerivedTensorMap &map) const {
  return map.sourceSlot ? slots[*map.sourceSlot] : map.spec.data;
}

bool KernelArgs::isCurrent(const DerivedTensorMap &map) const {
  return map.encoded && map.spec.data == currentAddress(map);
}

bool KernelArgs::ready() const {
  for (const DerivedTensorMap &map : derivedMaps)
    if (!isCurrent(map))
      return false;
  return true;
}

std::vector<std::string> KernelArgs::staleTensorMaps() const {
  std::vector<std::string> stale;
  for (const DerivedTensorMap &map : derivedMaps)
    if (!isCurrent(map))
      stale.push_back(map.param);
  return stale;
}

void KernelArgs::requireCurrentTensorMaps() const {
  for (const DerivedTensorMap &map : derivedMaps) {
    if (isCurrent(map))
      continue;
    CUdeviceptr address = currentAddress(map);
    std::string why =
        address == 0 ? "'" + map.tensor + "' has a null (placeholder) pointer"
        : map.encoded
            ? "it maps " + hexAddress(map.spec.data) + " but '" + map.tensor +
                  "' is now at " + hexAddress(address) +
                  " (refreshTensorMaps was not called after the patch)"
            : "it was not encoded for '" + map.tensor + "' at " +
                  hexAddress(address) +
                  " (refreshTensorMaps was not called after the patch)";
    throw Error("launching kernel " + kernelName + ": " +
                describeTensorMapParam(map.param, map.tensor) +
                " is not current: " + why);
  }
}

void KernelArgs::refreshTensorMaps() {
  for (DerivedTensorMap &map : derivedMaps) {
    if (isCurrent(map))
      continue;
    CUdeviceptr address = currentAddress(map);
    // Unencoded until it encodes: a failure leaves a zeroed map that
    // pointers() refuses and the next refresh retries.
    tensorMaps[map.map] = CUtensorMap{};
    map.encoded = false;
    map.spec.data = address;
    if (address == 0)
      continue;
    try {
      tensorMaps[map.map] = encodeTiledTensorMap(map.spec);
    } catch (const NoDeviceError &) {
      throw;
    } catch (const Error &error) {
      throw Error("refreshing the tensor maps of kernel " + kernelName + ": " +
                  describeTensorMapParam(map.param, map.tensor) + ": " +
                  error.what());
    }
    map.encoded = true;
  }
}

} // namespace fa
