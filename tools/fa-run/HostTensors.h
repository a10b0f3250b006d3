//===- HostTensors.h - Inputs and outputs of fa-run's commands --*- C++ -*-===//
//
// What the commands that run kernels share about tensors: random inputs,
// inputs from .npy files, outputs written to .npy files, the byte that
// poisons outputs before a checked run, and the cap on benchmark buffer sets.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUN_HOSTTENSORS_H
#define FA_RUN_HOSTTENSORS_H

#include "fa/runtime/DType.h"
#include "fa/runtime/Tensor.h"

#include <cstdint>
#include <random>
#include <string>

namespace fa {

/// Every byte 0xFF makes every bf16, f16 and f32 element NaN, so outputs
/// filled with it show the elements a kernel left unwritten.
inline constexpr std::uint8_t kNaNBytes = 0xFF;

/// Tiny problems would need thousands of buffer sets to span 2x L2; they are
/// bound by launch latency anyway, so the count is capped.
inline constexpr int kMaxBufferSets = 64;

/// Standard normal values rounded to `dtype`.
HostTensor randomTensor(const Shape &shape, DType dtype, std::mt19937_64 &rng);

/// A .npy file's values rounded to `dtype` (what the kernel will see).
HostTensor readInput(const std::string &path, DType dtype);

/// Writes `tensor`, an output held in `dtype`, as the NumPy type that holds
/// it exactly: '<f2' for f16, else '<f4' (NumPy has no bfloat16).
void writeOutput(const std::string &path, const HostTensor &tensor,
                 DType dtype);

} // namespace fa

#endif // FA_RUN_HOSTTENSORS_H
