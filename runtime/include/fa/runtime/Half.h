//===- Half.h - fp16 and bf16 on the host -----------------------*- C++ -*-===//
//
// Conversions between float and the 16-bit formats, as bit patterns. Float to
// 16 bits rounds to nearest, ties to even (what the GPU's cvt.rn does), so
// host-quantised inputs are exactly what a kernel would have computed.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_HALF_H
#define FA_RUNTIME_HALF_H

#include <cstdint>

namespace fa {

/// IEEE binary16: 1 sign, 5 exponent, 10 mantissa bits.
std::uint16_t floatToHalf(float value);
float halfToFloat(std::uint16_t bits);

/// bfloat16: the top 16 bits of a float (8 exponent, 7 mantissa bits).
std::uint16_t floatToBfloat16(float value);
float bfloat16ToFloat(std::uint16_t bits);

} // namespace fa

#endif // FA_RUNTIME_HALF_H
