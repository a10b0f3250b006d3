//===- Error.h - Errors that say what was being done ------------*- C++ -*-===//
//
// Every failure in the runtime is an fa::Error whose message starts with what
// was being done ("loading kernel attention_fwd_bf16_d128 from lib.ptx: ...").
// Tools catch it in main, print the message and exit non-zero.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_ERROR_H
#define FA_RUNTIME_ERROR_H

#include <cuda.h>

#include <stdexcept>
#include <string>

namespace fa {

class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// No driver or no GPU: tools may report this as "skipped" rather than failed.
class NoDeviceError : public Error {
public:
  using Error::Error;
};

/// Throws Error("<what>: CUDA_ERROR_NAME: description") unless `result` is
/// CUDA_SUCCESS.
void checkCu(CUresult result, const std::string &what);

/// "CUDA_ERROR_NAME: description" for a driver result code.
std::string describeCuResult(CUresult result);

} // namespace fa

#endif // FA_RUNTIME_ERROR_H
