//===- ErrorTesting.h - The message of an expected fa::Error ----*- C++ -*-===//
//
// Shared by the runtime's and the training library's tests, which check
// error messages word for word.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TEST_ERRORTESTING_H
#define FA_TEST_ERRORTESTING_H

#include "fa/runtime/Error.h"

#include <string>

namespace fa::errortest {

/// The message of the fa::Error `function` throws, or "no error".
template <typename Function> std::string errorOf(Function function) {
  try {
    function();
  } catch (const Error &error) {
    return error.what();
  }
  return "no error";
}

} // namespace fa::errortest

#endif // FA_TEST_ERRORTESTING_H
