//===- CheckedMath.h - Sizes that cannot overflow ----------------*- C++ -*-===//
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

/// a * b; throws Error("<what>: ... overflows") when it does not fit.
template <typename T> T checkedMultiply(T a, T b, const std::string &what) {
  T product;
  if (__builtin_mul_overflow(a, b, &product))
    throw Error(what + ": " + std::to_string(a) + " x " + std::to_string(b) +
                " overflows a " + std::to_string(sizeof(T) * 8) +
                "-bit integer");
  return product;
}

/// a + b; throws Error("<what>: ... overflows") when it does not fit.
template <typename T> T checkedAdd(T a, T b, const std::string &what) {
  T sum;
  if (__builtin_add_overflow(a, b, &sum))
    throw Error(what + ": " + std::to_string(a) + " + " + std::to_string(b) +
                " overflows a " + std::to_string(sizeof(T) * 8) +
                "-bit integer");
  return sum;
}

} // namespace fa

#endif // FA_RUNTIME_CHECKEDMATH_H
