//===- LayerNormShape.cpp -------------------------------------------------===//

#include "fa/runtime/LayerNormShape.h"

#include "fa/runtime/Error.h"
#include "fa/runtime/Tensor.h"

namespace fa {
namespace {

double matrixBytes(const LayerNormShape &shape, DType dtype) {
  return static_cast<double>(shape.rows) * static_cast<double>(shape.cols) *
         static_cast<double>(dtypeBytes(dtype));
}

} // namespace

LayerNormShape LayerNormShape::ofTensor(const Shape &x) {
  if (x.empty())
    throw Error("layernorm: x must have at least one dimension (the one "
                "normalised), got a scalar");
  return {elementCount(Shape(x.begin(), x.end() - 1)), x.back()};
}

void LayerNormShape::validate() const {
  const std::pair<const char *, std::int64_t> sizes[] = {{"rows", rows},
                                                         {"cols", cols}};
  for (const auto &[name, size] : sizes)
    if (size < 1)
      throw Error("layernorm shape " + describe() + ": " + name +
                  " must be positive");
  // x, y and dy are rows x cols; sizing them in f32 must not overflow.
  tensorBytes(matrix(), DType::F32);
}

double LayerNormShape::forwardBytes(DType dtype) const {
  return 2 * matrixBytes(*this, dtype);
}

double LayerNormShape::backwardBytes(DType dtype) const {
  return 3 * matrixBytes(*this, dtype);
}

std::string LayerNormShape::describe() const {
  return "rows=" + std::to_string(rows) + " cols=" + std::to_string(cols);
}

} // namespace fa
