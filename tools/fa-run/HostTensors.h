//===- HostTensors.h - Inputs and outputs of fa-run's commands --*- C++ -*-===//
//
// What the commands that run kernels share about tensors: inputs from .npy
// files or drawn on the device, and outputs written to .npy files. Random
// host tensors (randomTensor), the poison byte (kNaNBytes) and the cap on
// benchmark buffer sets (kMaxBufferSets) are the runtime's, shared with
// fa-handwritten.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUN_HOSTTENSORS_H
#define FA_RUN_HOSTTENSORS_H

#include "fa/runtime/Benchmark.h"
#include "fa/runtime/DType.h"
#include "fa/runtime/DeviceBuffer.h"
#include "fa/runtime/Stream.h"
#include "fa/runtime/Tensor.h"

#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

namespace fa {

/// A .npy file's values rounded to `dtype` (what the kernel will see).
HostTensor readInput(const std::string &path, DType dtype);

/// Writes `tensor`, an output held in `dtype`, as the NumPy type that holds
/// it exactly: '<f2' for f16, else '<f4' (NumPy has no bfloat16).
void writeOutput(const std::string &path, const HostTensor &tensor,
                 DType dtype);

/// One input of a run: the device buffer its kernels read, and the problem's
/// host tensor for it, which holds it where the run needs it on the host
/// (read from a file, or downloaded for a CPU reference).
struct RunInput {
  DeviceBuffer &device;
  HostTensor &host;
  Shape shape;
};

/// Standard normal values rounded to `dtype`, drawn on the device: input i
/// is tensor i of DeviceRandom(seed), so that a seed gives the same tensors
/// whatever else the run does (ops list their optional inputs last).
void drawRandomInputs(std::uint64_t seed, const std::vector<RunInput> &inputs,
                      DType dtype, const Stream &stream);
/// Copies the device inputs into their host tensors.
void downloadInputs(const std::vector<RunInput> &inputs, DType dtype);
/// Copies the host tensors into their device inputs.
void uploadInputs(const std::vector<RunInput> &inputs, DType dtype);

/// An output the user may have asked for in a file.
struct OutputFile {
  const std::string &path; // Empty: not asked for.
  const HostTensor &tensor;
  DType heldIn; // As writeOutput's `dtype`.
};

/// Writes the outputs asked for; returns their paths, in order.
std::vector<std::string>
writeOutputFiles(std::initializer_list<OutputFile> outputs);

} // namespace fa

#endif // FA_RUN_HOSTTENSORS_H
