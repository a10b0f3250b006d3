//===- TensorMap.cpp - Encoding TMA tensor maps ---------------------------===//

#include "fa/runtime/TensorMap.h"

#include "fa/runtime/Driver.h"
#include "fa/runtime/Error.h"

#include <array>
#include <sstream>

namespace fa {
namespace {

/// cuTensorMapEncodeTiled's other limits (CUDA driver API documentation).
constexpr std::int64_t kAddressAlignment = 16;
constexpr std::int64_t kStrideAlignment = 16;
constexpr std::int64_t kBoxRowGranule = 16;
constexpr std::int64_t kMaxDim = std::int64_t{1} << 32;
constexpr std::int64_t kMaxStrideBytes = std::int64_t{1} << 40;

CUtensorMapDataType tensorMapDataType(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  case DType::F16:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  case DType::F32:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  }
  throw Error("tensor map: unknown dtype");
}

CUtensorMapSwizzle tensorMapSwizzle(TensorMapSwizzle swizzle) {
  switch (swizzle) {
  case TensorMapSwizzle::None:
    return CU_TENSOR_MAP_SWIZZLE_NONE;
  case TensorMapSwizzle::Bytes32:
    return CU_TENSOR_MAP_SWIZZLE_32B;
  case TensorMapSwizzle::Bytes64:
    return CU_TENSOR_MAP_SWIZZLE_64B;
  case TensorMapSwizzle::Bytes128:
    return CU_TENSOR_MAP_SWIZZLE_128B;
  }
  throw Error("tensor map: unknown swizzle");
}

/// The widest box row a swizzle takes, in bytes (0: no limit).
std::int64_t swizzleSpan(TensorMapSwizzle swizzle) {
  switch (swizzle) {
  case TensorMapSwizzle::None:
    return 0;
  case TensorMapSwizzle::Bytes32:
    return 32;
  case TensorMapSwizzle::Bytes64:
    return 64;
  case TensorMapSwizzle::Bytes128:
    return 128;
  }
  return 0;
}

Shape stridesOf(const TiledTensorMapSpec &spec) {
  return spec.strides.empty() ? rowMajorStrides(spec.shape) : spec.strides;
}

[[noreturn]] void refuse(const TiledTensorMapSpec &spec,
                         const std::string &rule) {
  throw Error("encoding a tiled tensor map (" + describeTensorMap(spec) +
              "): " + rule);
}

} // namespace

const char *tensorMapSwizzleName(TensorMapSwizzle swizzle) {
  switch (swizzle) {
  case TensorMapSwizzle::None:
    return "none";
  case TensorMapSwizzle::Bytes32:
    return "32b";
  case TensorMapSwizzle::Bytes64:
    return "64b";
  case TensorMapSwizzle::Bytes128:
    return "128b";
  }
  return "unknown";
}

std::optional<TensorMapSwizzle> tensorMapSwizzleNamed(const std::string &name) {
  for (TensorMapSwizzle swizzle :
       {TensorMapSwizzle::None, TensorMapSwizzle::Bytes32,
        TensorMapSwizzle::Bytes64, TensorMapSwizzle::Bytes128})
    if (name == tensorMapSwizzleName(swizzle))
      return swizzle;
  return std::nullopt;
}

std::string describeTensorMap(const TiledTensorMapSpec &spec) {
  std::ostringstream text;
  text << dtypeName(spec.dtype) << " tensor at 0x" << std::hex << spec.data
       << std::dec << " of shape " << formatShape(spec.shape) << ", strides "
       << (spec.strides.empty() ? "row-major" : formatShape(spec.strides))
       << ", box " << formatShape(spec.box) << ", swizzle "
       << tensorMapSwizzleName(spec.swizzle);
  return text.str();
}

void checkTiledTensorMapSpec(const TiledTensorMapSpec &spec) {
  std::size_t rank = spec.shape.size();
  if (rank < 1 || rank > kMaxTensorMapRank)
    refuse(spec,
           "a tensor map has 1 to 5 dimensions, got " + std::to_string(rank));
  if (spec.box.size() != rank)
    refuse(spec, "the box needs one size per tensor dimension (" +
                     std::to_string(rank) + "), got " +
                     std::to_string(spec.box.size()));
  if (!spec.strides.empty() && spec.strides.size() != rank)
    refuse(spec, "strides need one value per tensor dimension (" +
                     std::to_string(rank) + "), got " +
                     std::to_string(spec.strides.size()));
  if (spec.data % kAddressAlignment != 0)
    refuse(spec, "the address must be a multiple of 16 bytes");
  auto elementBytes = static_cast<std::int64_t>(dtypeBytes(spec.dtype));
  Shape strides = stridesOf(spec);
  for (std::size_t d = 0; d < rank; ++d) {
    std::string dim = "dimension " + std::to_string(d);
    if (spec.shape[d] < 1 || spec.shape[d] > kMaxDim)
      refuse(spec, dim + " must hold 1 to 2^32 elements");
    if (spec.box[d] < 1 || spec.box[d] > kMaxTensorMapBoxDim)
      refuse(spec, "box " + dim + " must be 1 to 256 elements");
    if (d + 1 == rank) {
      if (strides[d] != 1)
        refuse(spec, "the innermost stride must be 1 element");
      continue;
    }
    std::int64_t strideBytes = strides[d] * elementBytes;
    if (strides[d] < 1 || strideBytes % kStrideAlignment != 0 ||
        strideBytes >= kMaxStrideBytes)
      refuse(spec, "the stride of " + dim +
                       " must be a positive multiple of 16 bytes below 2^40, "
                       "got " +
                       std::to_string(strideBytes) + " bytes");
  }
  std::int64_t boxRowBytes = spec.box.back() * elementBytes;
  if (boxRowBytes % kBoxRowGranule != 0)
    refuse(spec, "a box row must be a multiple of 16 bytes, got " +
                     std::to_string(boxRowBytes));
  std::int64_t span = swizzleSpan(spec.swizzle);
  if (span != 0 && boxRowBytes > span)
    refuse(spec, "a box row under swizzle " +
                     std::string(tensorMapSwizzleName(spec.swizzle)) +
                     " must be at most " + std::to_string(span) +
                     " bytes, got " + std::to_string(boxRowBytes));
}

CUtensorMap encodeTiledTensorMap(const TiledTensorMapSpec &spec) {
  checkTiledTensorMapSpec(spec);
  std::size_t rank = spec.shape.size();
  auto elementBytes = static_cast<std::int64_t>(dtypeBytes(spec.dtype));
  Shape strides = stridesOf(spec);
  // Innermost first; strides in bytes, without the innermost (implicit).
  std::array<cuuint64_t, kMaxTensorMapRank> globalDim{}, globalStrides{};
  std::array<cuuint32_t, kMaxTensorMapRank> boxDim{}, elementStrides{};
  for (std::size_t i = 0; i < rank; ++i) {
    std::size_t d = rank - 1 - i;
    globalDim[i] = static_cast<cuuint64_t>(spec.shape[d]);
    boxDim[i] = static_cast<cuuint32_t>(spec.box[d]);
    // Every element of the box, none skipped.
    elementStrides[i] = 1;
    if (i > 0)
      globalStrides[i - 1] = static_cast<cuuint64_t>(strides[d] * elementBytes);
  }
  CUtensorMap map;
  CUresult result = driver().cuTensorMapEncodeTiled(
      &map, tensorMapDataType(spec.dtype), static_cast<cuuint32_t>(rank),
      reinterpret_cast<void *>(spec.data), globalDim.data(),
      globalStrides.data(), boxDim.data(), elementStrides.data(),
      CU_TENSOR_MAP_INTERLEAVE_NONE, tensorMapSwizzle(spec.swizzle),
      CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  checkCu(result, "encoding a tiled tensor map (cuTensorMapEncodeTiled: " +
                      describeTensorMap(spec) + ")");
  return map;
}

} // namespace fa
