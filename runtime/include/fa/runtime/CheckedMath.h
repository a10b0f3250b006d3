//===- CheckedMath.h - Sizes that cannot overflow ----------------*- C++
//-*-===//
//
// Every size the runtime computes from user input (tensor shapes, file
// headers, command-line options) goes through these: a product or sum that
// does not fit is an error naming what was being sized, never a wrapped-around
// allocation.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_CHECKEDMATH_H
#define FA_RUNTIME_CHECKEDMATH_H

#include "fa/runtime/Error.h"

#include <cstdint>
#include <string>

namespace fa {

namespace detail {
/// `overflows(a, b, &result)` (a GCC/Clang overflow builtin), or throws
/// Error("<what>: a <symbol> b overflows a N-bit integer").
template <typename T, typename Overflows>
T checked(T a, T b, Overflows overflows, const char *symbol,
          const std::string &what) {
  T result;
  if (overflows(a, b, &result))
    throw Error(what + ": " + std::to_string(a) + symbol + std::to_string(b) +
                " overflows a " + std::to_string(sizeof(T) * 8) +
                "-bit integer");
  return result;
}
} // namespace detail

/// a * b; throws Error("<what>: ... overflows") when it does not fit.
template <typename T> T checkedMultiply(T a, T b, const std::string &what) {
  return detail::checked(
      a, b, [](T x, T y, T *r) { return __builtin_mul_overflow(x, y, r); },
      " x ", what);
}

/// a + b; throws Error("<what>: ... overflows") when it does not fit.
template <typename T> T checkedAdd(T a, T b, const std::string &what) {
  return detail::checked(
      a, b, [](T x, T y, T *r) { return __builtin_add_overflow(x, y, r); },
      " + ", what);
}

/// The smallest multiple of `multiple` (positive) at or above `value`
/// (non-negative): offsets and sizes padded to an alignment. value +
/// multiple - 1 must fit in T; the callers' sizes are checked already.
template <typename T> constexpr T roundUp(T value, T multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

} // namespace fa

#endif // FA_RUNTIME_CHECKEDMATH_H
