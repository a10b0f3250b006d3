//===- Npy.h - NumPy .npy files ---------------------------------*- C++ -*-===//
//
// Reads and writes the .npy format (versions 1.0, 2.0 and 3.0) for
// little-endian, C-ordered float arrays. NumPy has no bfloat16, so bf16
// tensors travel as '<f4' (or '<f2') and are rounded to the kernel's type
// after loading.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_NPY_H
#define FA_RUNTIME_NPY_H

#include "fa/runtime/DType.h"
#include "fa/runtime/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fa {

/// Reads '<f2', '<f4' or '<f8' data into floats. Errors name the file and
/// what is wrong with it. The file is untrusted: a header longer than
/// NumPy's limit (10000 bytes) is refused, and the data size the header
/// declares is checked for overflow and against the file's size before
/// anything is allocated.
HostTensor readNpy(const std::string &path);

/// An integer (or bool) array, e.g. document ids or a mask.
struct IntegerTensor {
  Shape shape;
  std::vector<std::int64_t> values;
};

/// Reads bool ('|b1') or integer ('|u1', '|i1', '<i2' ... '<u8') data, as
/// readNpy reads floats (the same checks on the untrusted file).
IntegerTensor readNpyIntegers(const std::string &path);

/// Writes `tensor` as '<i4'; throws for a value int32 cannot hold.
void writeNpy(const std::string &path, const IntegerTensor &tensor);

/// Writes `tensor` as '<f4' (F32) or '<f2' (F16); BF16 has no NumPy type.
void writeNpy(const std::string &path, const HostTensor &tensor, DType storage);

/// Throws, naming the file, unless `tensor` has the shape `expected`
/// ("q.npy has shape [2, 4, 8], expected [2, 4, 8, 64] (what)").
void expectNpyShape(const std::string &path, const HostTensor &tensor,
                    const Shape &expected, const std::string &meaning);

} // namespace fa

#endif // FA_RUNTIME_NPY_H
