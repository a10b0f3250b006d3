//===- cuda_check.h - CUDA runtime API errors that say what -----*- C++ -*-===//
//
// The hand-written kernels are launched with the CUDA runtime API (<<<>>>),
// in the runtime's primary context. Their errors become fa::Error, as the
// driver API's do in the runtime (fa/runtime/Error.h): the message starts
// with what was being done ("launching handwritten_layernorm_fwd_bf16_...
// (grid 37x1, 256 threads): cudaErrorInvalidConfiguration: invalid
// configuration argument").
//
//===----------------------------------------------------------------------===//

#ifndef FA_BENCH_HANDWRITTEN_CUDA_CHECK_H
#define FA_BENCH_HANDWRITTEN_CUDA_CHECK_H

#include <cuda_runtime_api.h>

#include <string>

namespace fa::handwritten {

/// Throws fa::Error("<what>: cudaErrorName: description") unless `result`
/// is cudaSuccess.
void checkCuda(cudaError_t result, const std::string &what);

/// Call right after a <<<>>> launch: throws fa::Error("launching <kernel>:
/// ...") when the launch failed (bad configuration, no kernel image for the
/// GPU, an earlier sticky error).
void checkLaunch(const std::string &kernel);

} // namespace fa::handwritten

#endif // FA_BENCH_HANDWRITTEN_CUDA_CHECK_H
