//===- Matmul.h - Matrix products through cuBLASLt --------------*- C++ -*-===//
//
// The GPT model's linear layers, row-major as PyTorch's nn.Linear: x [M, K],
// weight [N, K], y [M, N]. Inputs are `dtype` (BF16 or F32), accumulation is
// f32 (CUBLAS_COMPUTE_32F; TF32 never), and each product's cuBLASLt
// descriptors and heuristic algorithm are chosen once per shape and reused,
// so repeated steps run the same algorithm (bitwise reproducible).
// Every cuBLASLt call is checked; errors name the product and its shape.
//
// Every pointer must be 16-byte aligned (cuMemAlloc's are; so are the flat
// parameter array's tensors, see GptConfig.h): plans are shared by all
// operands of a shape, so their algorithms are chosen for that alignment.
// A Matmul holds one workspace: use it from one stream (and thread) at a time.
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
  /// x, weight, bias `dtype`; y `outType` (`dtype`, or F32 for logits, which
  /// takes no bias: cuBLASLt's bias has y's type).
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
  struct Product;
  struct Plan;
  /// The plan of one product, created on first use.
  Plan &plan(const Product &product);
  /// D = op(A) op(B) (+ bias) (+ D) in cuBLASLt's terms (see Matmul.cpp).
  void run(const Product &product, const Stream &stream);

  void *handle = nullptr; // cublasLtHandle_t, kept out of this header.
  DeviceBuffer workspace;
  std::map<std::string, std::unique_ptr<Plan>> plans;
};

} // namespace fa::train

#endif // FA_TRAIN_MATMUL_H
