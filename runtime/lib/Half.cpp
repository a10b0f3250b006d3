//===- Half.cpp -----------------------------------------------------------===//

#include "fa/runtime/Half.h"

#include <cstring>

namespace fa {
namespace {

std::uint32_t floatBits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float bitsToFloat(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

constexpr std::uint32_t kFloatInfinity = 0x7F800000;
// Smallest float that rounds to half infinity: 65520 (max half is 65504).
constexpr std::uint32_t kHalfOverflow = 0x477FF000;
// 2^-14, the smallest normal half.
constexpr std::uint32_t kHalfMinNormal = 0x38800000;

} // namespace

std::uint16_t floatToHalf(float value) {
  std::uint32_t bits = floatBits(value);
  std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000);
  std::uint32_t magnitude = bits & 0x7FFFFFFF;

  if (magnitude > kFloatInfinity)
    return sign | 0x7E00; // NaN stays NaN (quiet).
  if (magnitude >= kHalfOverflow)
    return sign | 0x7C00;
  if (magnitude < kHalfMinNormal) {
    // Subnormal or zero. Adding 0.5 makes the float's last mantissa bit worth
    // 2^-24, a half subnormal's unit, so the FPU does the round-to-even.
    float shifted = bitsToFloat(magnitude) + 0.5f;
    return sign |
           static_cast<std::uint16_t>(floatBits(shifted) - floatBits(0.5f));
  }
  // Normal: rebias the exponent (127 -> 15), then round away the low 13
  // mantissa bits to even; a carry correctly bumps the exponent.
  std::uint32_t lowestKeptBit = (magnitude >> 13) & 1;
  magnitude +=
      (static_cast<std::uint32_t>(15 - 127) << 23) + 0xFFF + lowestKeptBit;
  return sign | static_cast<std::uint16_t>(magnitude >> 13);
}

float halfToFloat(std::uint16_t bits) {
  std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000) << 16;
  std::uint32_t exponent = (bits >> 10) & 0x1F;
  std::uint32_t mantissa = bits & 0x3FF;

  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    float magnitude = static_cast<float>(mantissa) * bitsToFloat(0x33800000);
    return bitsToFloat(sign | floatBits(magnitude));
  }
  if (exponent == 0x1F)
    return bitsToFloat(sign | kFloatInfinity | (mantissa << 13));
  return bitsToFloat(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

std::uint16_t floatToBfloat16(float value) {
  std::uint32_t bits = floatBits(value);
  if ((bits & 0x7FFFFFFF) > kFloatInfinity)
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040); // Quiet NaN.
  // Round to nearest even on the 16 bits dropped; overflow gives infinity.
  std::uint32_t lowestKeptBit = (bits >> 16) & 1;
  return static_cast<std::uint16_t>((bits + 0x7FFF + lowestKeptBit) >> 16);
}

float bfloat16ToFloat(std::uint16_t bits) {
  return bitsToFloat(static_cast<std::uint32_t>(bits) << 16);
}

} // namespace fa
