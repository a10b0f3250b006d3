//===- RandomFill.h - Random normal tensors generated on the GPU -*- C++
//-*-===//
//
// The random inputs of fa-run's commands, drawn on the device (RandomFill.cu
// defines element i of tensor `index` as a pure function of (seed, index,
// i)), so that a benchmark needs no host copy of its inputs and a check
// downloads only what its CPU reference reads.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_RANDOMFILL_H
#define FA_RUNTIME_RANDOMFILL_H

#include "fa/runtime/DType.h"
#include "fa/runtime/DeviceBuffer.h"
#include "fa/runtime/Module.h"
#include "fa/runtime/Stream.h"

#include <cstdint>
#include <initializer_list>

namespace fa {

/// The generator's kernels, loaded into the current context.
class DeviceRandom {
public:
  explicit DeviceRandom(std::uint64_t seed);

  /// Fills `buffer` with standard normal values rounded to `dtype` (as many
  /// as it holds), the `index`-th tensor of this seed, on `stream`.
  void fillNormal(const DeviceBuffer &buffer, DType dtype, std::uint64_t index,
                  const Stream &stream) const;
  /// Fills `buffers[i]` as tensor i (a null entry keeps its index unused, so
  /// that optional tensors do not renumber the ones after them), then waits.
  void fillNormal(std::initializer_list<const DeviceBuffer *> buffers,
                  DType dtype, const Stream &stream) const;

private:
  Module module;
  std::uint64_t seed;
};

} // namespace fa

#endif // FA_RUNTIME_RANDOMFILL_H
