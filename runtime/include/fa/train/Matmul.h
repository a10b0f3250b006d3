//===- Matmul.h - Matrix products through cuBLASLt --------------*- C++ -*-===//
//
// The GPT model's linear layers, row-major as PyTorch's nn.Linear: x [M, K],
// weight [N, K], y [M, N]. Inputs are `dtype` (BF16 or F32), accumulation is
// f32 (CUBLAS_COMPUTE_32F; TF32 never), and each product's cuBLASLt
// descriptors and heuristic algorithm are chosen once per shape and reused,
// so repeated steps run the same algorithm (bitwise reproducible).
// Every cuBLASLt call is checked; errors name the product and its shape.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TRAIN_MATMUL_H
#define FA_TRAIN_MATMUL_H

#include "fa/runtime/DType.h"
#include "fa/runtime/DeviceBuffer.h"
#include "fa/runtime/Stream.h"

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace fa::train {

/// One linear layer's sizes: rows M (tokens), input features K, outputs N.
struct LinearShape {
  std::int64_t rows = 0;
  std::int64_t in = 0;
  std::int64_t out = 0;
};

class Matmul {
public:
  /// Creates the cuBLASLt handle (in the current context) and a workspace.
  explicit Matmul(std::size_t workspaceBytes = std::size_t{32} << 20);
  ~Matmul();
  Matmul(const Matmul &) = delete;
  Matmul &operator=(const Matmul &) = delete;

  /// y = x weight^T (+ bias[N] broadcast over rows when bias != 0).
  /// x, weight, bias `dtype`; y `outType` (`dtype`, or F32 for logits).
  void forward(DType dtype, DType outType, const LinearShape &shape,
               CUdeviceptr x, CUdeviceptr weight, CUdeviceptr bias,
               CUdeviceptr y, const Stream &stream);
  /// dx = dy weight: dy [M, N], weight [N, K], dx [M, K], all `dtype`.
  /// accumulate: dx += instead of =.
  void backwardInput(DType dtype, const LinearShape &shape, CUdeviceptr dy,
                     CUdeviceptr weight, CUdeviceptr dx, bool accumulate,
                     const Stream &stream);
  /// dweight = dy^T x: dy [M, N], x [M, K] (`dtype`), dweight f32 [N, K].
  /// accumulate: dweight += instead of = (a tied head, micro-batches).
  void backwardWeight(DType dtype, const LinearShape &shape, CUdeviceptr dy,
                      CUdeviceptr x, CUdeviceptr dweight, bool accumulate,
                      const Stream &stream);

private:
  struct Plan;
  /// The plan of one product, created on first use.
  Plan &plan(const std::string &key);

  void *handle = nullptr; // cublasLtHandle_t, kept out of this header.
  DeviceBuffer workspace;
  std::map<std::string, std::unique_ptr<Plan>> plans;
};

} // namespace fa::train

#endif // FA_TRAIN_MATMUL_H
