//===- DType.h - Element types of kernel tensors ----------------*- C++ -*-===//
//
// On the host every tensor is held as float, which represents bf16 and f16
// values exactly; a tensor is encoded into its kernel's element type only on
// its way to the device.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_DTYPE_H
#define FA_RUNTIME_DTYPE_H

#include "fa/runtime/DeviceBuffer.h"

#include <cstddef>
#include <string>
#include <vector>

namespace fa {

enum class DType { BF16, F16, F32 };

/// "bf16", "f16" or "f32" (the manifest's and fa-run's spelling).
DType parseDType(const std::string &name);
const char *dtypeName(DType dtype);
std::size_t dtypeBytes(DType dtype);

/// The value a kernel of this element type sees for `value`.
float roundToDType(float value, DType dtype);
void roundToDType(std::vector<float> &values, DType dtype);

Bytes encode(const std::vector<float> &values, DType dtype);
std::vector<float> decode(const Bytes &bytes, DType dtype);

} // namespace fa

#endif // FA_RUNTIME_DTYPE_H
