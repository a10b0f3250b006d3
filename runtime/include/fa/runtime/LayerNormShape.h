//===- LayerNormShape.h - The sizes of one LayerNorm problem ----*- C++ -*-===//
//
// LayerNorm normalises each row of x over its last dimension. Tensors are
// contiguous and row-major; x of any rank is viewed as [rows, cols] with rows
// the product of its leading dimensions:
//   x, y, dy, dx                 [rows, cols] in the kernel's dtype
//   weight, bias                 [cols]       in the kernel's dtype
//   mean, rstd                   [rows]       f32
//   dweight, dbias               [cols]       f32
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_LAYERNORMSHAPE_H
#define FA_RUNTIME_LAYERNORMSHAPE_H

#include "fa/runtime/DType.h"
#include "fa/runtime/Tensor.h"

#include <cstdint>
#include <string>

namespace fa {

struct LayerNormShape {
  std::int64_t rows = 1;
  std::int64_t cols = 1;

  /// x of shape `x` viewed as [prod(leading dimensions), last dimension];
  /// throws for a rank-0 shape.
  static LayerNormShape ofTensor(const Shape &x);

  Shape matrix() const { return {rows, cols}; } // x, y, dy, dx.
  Shape row() const { return {cols}; }          // weight, bias, dweight, dbias.
  Shape perRow() const { return {rows}; }       // mean, rstd.

  /// Throws unless rows and cols are positive.
  void validate() const;
  /// The bytes a forward pass must move at least: x read and y written,
  /// 2 * rows * cols * element size (weight, bias, mean and rstd are small).
  double forwardBytes(DType dtype) const;
  /// The backward's: x and dy read, dx written, 3 * rows * cols * element
  /// size.
  double backwardBytes(DType dtype) const;
  /// "rows=4096 cols=1024".
  std::string describe() const;
};

} // namespace fa

#endif // FA_RUNTIME_LAYERNORMSHAPE_H
