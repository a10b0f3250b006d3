//===- KernelArgs.cpp -----------------------------------------------------===//

#include "fa/runtime/KernelArgs.h"

#include "fa/runtime/Error.h"
#include "fa/runtime/TensorMap.h"

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
std::string describeTensorMapParam(const KernelParam &param) {
  return "parameter '" + param.name + "' (the tensor map of '" + param.tensor +
         "')";
}

class ArgPacker {
public:
  ArgPacker(const KernelSpec &spec, std::vector<std::uint64_t> &slots,
            std::vector<CUtensorMap> &tensorMaps,
            std::vector<std::pair<std::size_t, std::size_t>> &tensorMapSlots)
      : spec(spec), slots(slots), tensorMaps(tensorMaps),
        tensorMapSlots(tensorMapSlots) {}

  /// Packs `param`'s value from `bindings`: its own, or for a tensor map
  /// that names a tensor and has none, one encoded from the tensor's.
  void pack(const KernelParam &param, const ArgBindings &bindings) {
    auto value = bindings.find(param.name);
    if (value != bindings.end())
      return pack(param, value->second);
    if (param.kind == ParamKind::TensorMap && !param.tensor.empty())
      return packTensorMap(encodedTensorMap(param, bindings));
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

  /// The map of tensor-map parameter `param` encoded from the binding of its
  /// tensor. What tensorMapSpecOf (with TMA's rules) refuses is an error
  /// naming the kernel and both parameters; the driver's errors
  /// (encodeTiledTensorMap) describe the map.
  CUtensorMap encodedTensorMap(const KernelParam &param,
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
    TiledTensorMapSpec map;
    try {
      map = tensorMapSpecOf(param, *memref);
    } catch (const Error &error) {
      throw Error("passing arguments to kernel " + spec.name + ": " +
                  error.what());
    }
    return encodeTiledTensorMap(map);
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
};

} // namespace

TiledTensorMapSpec tensorMapSpecOf(const KernelParam &param,
                                   const MemrefArg &tensor) {
  if (param.kind != ParamKind::TensorMap || param.tensor.empty())
    throw Error("parameter '" + param.name + "' (" + paramKindName(param.kind) +
                ") is not a tensor map that names the tensor it maps");
  std::string what = describeTensorMapParam(param);
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
  ArgPacker packer(spec, slots, tensorMaps, tensorMapSlots);
  for (const KernelParam &param : spec.params) {
    paramSlots.emplace_back(param.name, slots.size());
    packer.pack(param, bindings);
  }
  pointAtSlots();
}

KernelArgs::KernelArgs(const KernelArgs &other)
    : kernelName(other.kernelName), slots(other.slots),
      paramSlots(other.paramSlots), tensorMaps(other.tensorMaps),
      tensorMapSlots(other.tensorMapSlots) {
  pointAtSlots();
}

KernelArgs &KernelArgs::operator=(const KernelArgs &other) {
  if (this != &other) {
    kernelName = other.kernelName;
    slots = other.slots;
    paramSlots = other.paramSlots;
    tensorMaps = other.tensorMaps;
    tensorMapSlots = other.tensorMapSlots;
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

} // namespace fa
