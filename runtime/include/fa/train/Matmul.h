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
// The fused products (forwardGelu, backwardInputGelu, backwardWeightBias) do
// the MLP's GELU and the bias gradients in cuBLASLt's epilogues. Their GELU
// is cuBLASLt's: the tanh form of GptConfig.h,
//   gelu(u) = 0.5 u (1 + tanh(sqrt(2/pi) (u + 0.044715 u^3))),
// which cublasLt.h does not state (PyTorch relies on it: its
// _addmm_activation falls back to gelu(approximate="tanh")), computed in the
// epilogue in f32, possibly from u before its rounding to `dtype` (which
// TrainKernels::geluForward reads back): in bf16 the two paths may differ by
// one bf16 rounding of u. Its tanh may be approximate (tanh.approx.f32 is
// within 2^-11); MatmulGpuTest checks the form and that bound.
// Every split-K reduction cuBLASLt may choose is ordered (cublasLt.h:
// INPLACE keeps "counters ... to guarantee the sequentiality", the others
// reduce in a separate step), so no plan restricts the reduction scheme. How
// an epilogue sums a bias gradient across tiles is not documented: the tests
// run every product twice and compare the bits of each output, bias
// gradients included. When cuBLASLt has no algorithm for a fused product, its
// Error names the epilogue: callers fall back to the separate kernels
// (TrainKernels).
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
  static constexpr std::size_t kDefaultWorkspaceBytes = std::size_t{32} << 20;

  /// Creates the cuBLASLt handle (in the current context) and a workspace.
  explicit Matmul(std::size_t workspaceBytes = kDefaultWorkspaceBytes);
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

  /// preActivation = x weight^T + bias and y = gelu(preActivation)
  /// (CUBLASLT_EPILOGUE_GELU_AUX_BIAS): x [M, K], weight [N, K], bias [N],
  /// preActivation and y [M, N], all `dtype`. N must be a multiple of 8
  /// (cuBLASLt's rule for the leading dimension of preActivation).
  void forwardGelu(DType dtype, const LinearShape &shape, CUdeviceptr x,
                   CUdeviceptr weight, CUdeviceptr bias,
                   CUdeviceptr preActivation, CUdeviceptr y,
                   const Stream &stream);
  /// dx = (dy weight) * gelu'(preActivation) and dbias = the column sums of
  /// dx (CUBLASLT_EPILOGUE_DGELU_BGRAD): the backward of the linear layer
  /// after a forwardGelu, whose preActivation it reads, and of that GELU;
  /// dbias is the forwardGelu's bias gradient. dy [M, N], weight [N, K],
  /// preActivation and dx [M, K] (`dtype`), dbias f32 [K]; both overwritten.
  /// K must be a multiple of 8. cuBLASLt documents the bias gradient in dx's
  /// type (cublasLt.h, CUBLASLT_MATMUL_DESC_BIAS_POINTER): for bf16 the plan
  /// asks for f32 (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE) and, if cuBLASLt
  /// refuses, takes the sums in bf16 and widens them to dbias (one more
  /// small product; the sums then carry one bf16 rounding).
  void backwardInputGelu(DType dtype, const LinearShape &shape, CUdeviceptr dy,
                         CUdeviceptr weight, CUdeviceptr preActivation,
                         CUdeviceptr dx, CUdeviceptr dbias,
                         const Stream &stream);
  /// dx = (dy weight) * gelu'(preActivation) alone
  /// (CUBLASLT_EPILOGUE_DGELU), the bias gradient left to the caller (the
  /// model takes it in fc's dW product, BGRADB): on an H100 at 16384 x
  /// 768 -> 3072 the product takes 0.18 ms against 0.13 without gelu', where
  /// DGELU_BGRAD has no f32-gradient algorithm for bf16 and its bf16 one cost
  /// the 85M step 4.3 ms (bench/results/2026-12-07-cublaslt-algos).
  void backwardInputGelu(DType dtype, const LinearShape &shape, CUdeviceptr dy,
                         CUdeviceptr weight, CUdeviceptr preActivation,
                         CUdeviceptr dx, const Stream &stream);
  /// dweight = dy^T x as backwardWeight, and dbias f32 [N] = the column sums
  /// of dy (CUBLASLT_EPILOGUE_BGRADB: dy is the product's B). Both are
  /// overwritten: cuBLASLt writes the bias gradient, it cannot add to it.
  void backwardWeightBias(DType dtype, const LinearShape &shape, CUdeviceptr dy,
                          CUdeviceptr x, CUdeviceptr dweight, CUdeviceptr dbias,
                          const Stream &stream);

private:
  struct Product;
  struct Plan;
  /// The plan of one product, created on first use: the first of its bias
  /// types that cuBLASLt has an algorithm for.
  Plan &plan(const Product &product);
  /// plan's matmul descriptor for the product with that bias type.
  static void setDescriptor(Plan &plan, const Product &product, DType biasType);
  /// The three mappings onto cuBLASLt's terms (Matmul.cpp), operands and
  /// sizes checked; `op` and `flags` name the product in errors.
  static Product forwardProduct(const char *op, DType dtype, DType outType,
                                const LinearShape &shape, CUdeviceptr x,
                                CUdeviceptr weight, CUdeviceptr y,
                                const char *flags);
  static Product backwardInputProduct(const char *op, DType dtype,
                                      const LinearShape &shape, CUdeviceptr dy,
                                      CUdeviceptr weight, CUdeviceptr dx,
                                      const char *flags);
  static Product backwardWeightProduct(const char *op, DType dtype,
                                       const LinearShape &shape, CUdeviceptr dy,
                                       CUdeviceptr x, CUdeviceptr dweight,
                                       const char *flags);
  /// wide (f32 [length]) = the bias gradient `narrow` left in bf16.
  void widen(const std::string &what, const Plan &narrow, CUdeviceptr wide,
             std::uint64_t length, const Stream &stream);
  /// D = op(A) op(B) (+ bias) (+ D) with its epilogue, in cuBLASLt's terms
  /// (see Matmul.cpp); the plan it ran.
  Plan &run(const Product &product, const Stream &stream);

  void *handle = nullptr; // cublasLtHandle_t, kept out of this header.
  DeviceBuffer workspace;
  std::map<std::string, std::unique_ptr<Plan>> plans;
};

} // namespace fa::train

#endif // FA_TRAIN_MATMUL_H
