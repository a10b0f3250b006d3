//===- HostTensors.h - Inputs and outputs of fa-run's commands --*- C++ -*-===//
//
// What the commands that run kernels share about tensors: inputs from .npy
// files and outputs written to .npy files. Random inputs (randomTensor), the
// poison byte (kNaNBytes) and the cap on benchmark buffer sets
// (kMaxBufferSets) are the runtime's, shared with fa-handwritten.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUN_HOSTTENSORS_H
#define FA_RUN_HOSTTENSORS_H

#include "fa/runtime/Benchmark.h"
#include "fa/runtime/DType.h"
#include "fa/runtime/Tensor.h"

#include <cstdint>
#include <random>
#include <string>

namespace fa {

/// A .npy file's values rounded to `dtype` (what the kernel will see).
HostTensor readInput(const std::string &path, DType dtype);

/// Writes `tensor`, an output held in `dtype`, as the NumPy type that holds
/// it exactly: '<f2' for f16, else '<f4' (NumPy has no bfloat16).
void writeOutput(const std::string &path, const HostTensor &tensor,
                 DType dtype);

} // namespace fa

#endif // FA_RUN_HOSTTENSORS_H
