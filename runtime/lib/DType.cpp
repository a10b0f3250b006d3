//===- DType.cpp ----------------------------------------------------------===//

#include "fa/runtime/DType.h"

#include "fa/runtime/Error.h"
#include "fa/runtime/Half.h"

#include <cstring>

namespace fa {
namespace {

template <typename Encoded>
Bytes encodeWith(const std::vector<float> &values, Encoded (*convert)(float)) {
  Bytes bytes(values.size() * sizeof(Encoded));
  for (std::size_t i = 0; i < values.size(); ++i) {
    Encoded encoded = convert(values[i]);
    std::memcpy(bytes.data() + i * sizeof(Encoded), &encoded, sizeof(Encoded));
  }
  return bytes;
}

template <typename Encoded>
std::vector<float> decodeWith(const Bytes &bytes, float (*convert)(Encoded)) {
  std::vector<float> values(bytes.size() / sizeof(Encoded));
  for (std::size_t i = 0; i < values.size(); ++i) {
    Encoded encoded;
    std::memcpy(&encoded, bytes.data() + i * sizeof(Encoded), sizeof(Encoded));
    values[i] = convert(encoded);
  }
  return values;
}

float identity(float value) { return value; }

} // namespace

DType parseDType(const std::string &name) {
  if (name == "bf16")
    return DType::BF16;
  if (name == "f16")
    return DType::F16;
  if (name == "f32")
    return DType::F32;
  throw Error("unknown element type '" + name + "'; expected bf16, f16 or f32");
}

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  case DType::F32:
    return "f32";
  }
  return "?";
}

std::size_t dtypeBytes(DType dtype) { return dtype == DType::F32 ? 4 : 2; }

float roundToDType(float value, DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return bfloat16ToFloat(floatToBfloat16(value));
  case DType::F16:
    return halfToFloat(floatToHalf(value));
  case DType::F32:
    return value;
  }
  return value;
}

void roundToDType(std::vector<float> &values, DType dtype) {
  for (float &value : values)
    value = roundToDType(value, dtype);
}

Bytes encode(const std::vector<float> &values, DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return encodeWith(values, floatToBfloat16);
  case DType::F16:
    return encodeWith(values, floatToHalf);
  case DType::F32:
    return encodeWith(values, identity);
  }
  return {};
}

std::vector<float> decode(const Bytes &bytes, DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return decodeWith(bytes, bfloat16ToFloat);
  case DType::F16:
    return decodeWith(bytes, halfToFloat);
  case DType::F32:
    return decodeWith(bytes, identity);
  }
  return {};
}

} // namespace fa
