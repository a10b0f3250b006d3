//===- Matmul.cpp - Matrix products through cuBLASLt ----------------------===//
//
// cuBLASLt is column-major; our matrices are row-major. A row-major [R, C]
// matrix is, in the same memory, its transpose: a column-major C x R matrix
// with leading dimension C. So each row-major product P = L R is computed as
// the column-major P^T = R^T L^T, where every transpose is either free (the
// operand's memory read as column-major) or cuBLASLt's op T:
//
//   forward         y [M,N] = x [M,K] W^T      y^T (N x M) = W    x^T
//                   A = W as K x N, op T; B = x as K x M, op N; D N x M
//   backwardInput  dx [M,K] = dy [M,N] W       dx^T (K x M) = W^T  dy^T
//                   A = W as K x N, op N; B = dy as N x M, op N; D K x M
//   backwardWeight dW [N,K] = dy^T x           dW^T (K x N) = x^T  dy
//                   A = x as K x M, op N; B = dy as N x M, op T; D K x N
//
// Every matrix is packed, so each leading dimension is its rows (as stored).
// The forward's bias[N] is per row of D (N x M), which is what
// CUBLASLT_EPILOGUE_BIAS broadcasts: a vector as long as D has rows.
//
//===----------------------------------------------------------------------===//

#include "fa/train/Matmul.h"

#include "fa/runtime/Error.h"

#include <cublasLt.h>

#include <cstdint>
#include <sstream>

namespace fa::train {
namespace {

/// The alignment every operand must have, and the one algorithms are chosen
/// for (cuBLASLt's heuristic assumes 256 bytes unless told).
constexpr std::uint32_t kOperandAlignment = 16;

/// Throws Error("<what>: CUBLAS_STATUS_NAME: description") on failure.
void checkLt(cublasStatus_t status, const std::string &what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(what + ": " + cublasLtGetStatusName(status) + ": " +
                cublasLtGetStatusString(status));
}

cudaDataType_t cudaType(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return CUDA_R_16BF;
  case DType::F16:
    return CUDA_R_16F;
  case DType::F32:
    return CUDA_R_32F;
  }
  throw Error("unknown DType");
}

const void *devicePointer(CUdeviceptr pointer) {
  return reinterpret_cast<const void *>(static_cast<std::uintptr_t>(pointer));
}

/// Owns a cuBLASLt descriptor: unique_ptr with its destroy function.
template <typename Opaque, cublasStatus_t (*destroy)(Opaque *)> struct Destroy {
  void operator()(Opaque *object) const { destroy(object); }
};
using MatmulDesc = std::unique_ptr<
    cublasLtMatmulDescOpaque_t,
    Destroy<cublasLtMatmulDescOpaque_t, cublasLtMatmulDescDestroy>>;
using MatrixLayout = std::unique_ptr<
    cublasLtMatrixLayoutOpaque_t,
    Destroy<cublasLtMatrixLayoutOpaque_t, cublasLtMatrixLayoutDestroy>>;
using Preference = std::unique_ptr<
    cublasLtMatmulPreferenceOpaque_t,
    Destroy<cublasLtMatmulPreferenceOpaque_t, cublasLtMatmulPreferenceDestroy>>;

std::string describe(const char *op, DType in, DType out,
                     const LinearShape &shape, const char *extra) {
  return std::string("matrix product ") + op + " (" + dtypeName(in) + " -> " +
         dtypeName(out) + extra + ") rows=" + std::to_string(shape.rows) +
         " in=" + std::to_string(shape.in) +
         " out=" + std::to_string(shape.out);
}

/// The checks every product makes of its sizes and input type.
void checkShapeAndType(const std::string &what, const LinearShape &shape,
                       DType dtype) {
  if (shape.rows <= 0 || shape.in <= 0 || shape.out <= 0)
    throw Error(what + ": every size must be positive");
  if (dtype != DType::BF16 && dtype != DType::F32)
    throw Error(what + ": inputs must be bf16 or f32");
}

void checkOperand(const std::string &what, const char *name,
                  CUdeviceptr pointer) {
  if (pointer == 0)
    throw Error(what + ": " + name + " is null");
  if (pointer % kOperandAlignment != 0) {
    std::ostringstream address;
    address << std::hex << pointer;
    throw Error(what + ": " + name + " (0x" + address.str() + ") is not " +
                std::to_string(kOperandAlignment) + "-byte aligned");
  }
}

/// A packed column-major layout of the operand with `op` of the shape
/// (opRows x opCols) after op.
MatrixLayout packedLayout(const std::string &what, DType dtype,
                          cublasOperation_t op, std::uint64_t opRows,
                          std::uint64_t opCols) {
  const std::uint64_t rows = op == CUBLAS_OP_N ? opRows : opCols;
  const std::uint64_t cols = op == CUBLAS_OP_N ? opCols : opRows;
  cublasLtMatrixLayout_t layout = nullptr;
  checkLt(cublasLtMatrixLayoutCreate(&layout, cudaType(dtype), rows, cols,
                                     static_cast<std::int64_t>(rows)),
          what + ": cublasLtMatrixLayoutCreate");
  return MatrixLayout(layout);
}

template <typename Value>
void setDescAttribute(const std::string &what, cublasLtMatmulDesc_t desc,
                      cublasLtMatmulDescAttributes_t attribute,
                      const Value &value, const char *name) {
  checkLt(
      cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value)),
      what + ": setting " + name);
}

template <typename Value>
void setPreference(const std::string &what, cublasLtMatmulPreference_t pref,
                   cublasLtMatmulPreferenceAttributes_t attribute,
                   const Value &value, const char *name) {
  checkLt(cublasLtMatmulPreferenceSetAttribute(pref, attribute, &value,
                                               sizeof(value)),
          what + ": setting the preference " + name);
}

} // namespace

/// One call in cuBLASLt's terms: column-major D (m x n) = op(A) op(B)
/// (+ bias[m] broadcast over columns) (+ D when accumulating), op(A) m x k,
/// op(B) k x n, products in f32.
struct Matmul::Product {
  std::string what; // Op, types, flags and shape: for errors; the plan key.
  cublasOperation_t transA = CUBLAS_OP_N;
  cublasOperation_t transB = CUBLAS_OP_N;
  std::uint64_t m = 0, n = 0, k = 0;
  DType abType = DType::F32;
  DType dType = DType::F32;
  bool accumulate = false;
  CUdeviceptr a = 0, b = 0, bias = 0, d = 0;
};

/// What a product's every call reuses: its descriptors and algorithm.
struct Matmul::Plan {
  MatmulDesc desc;
  MatrixLayout a, b, d; // C is D (same buffer, type and layout).
  cublasLtMatmulAlgo_t algo{};
};

Matmul::Matmul(std::size_t workspaceBytes)
    : workspace("cuBLASLt workspace", workspaceBytes) {
  cublasLtHandle_t created = nullptr;
  checkLt(cublasLtCreate(&created), "creating the cuBLASLt handle");
  handle = created;
}

Matmul::~Matmul() {
  plans.clear();
  cublasLtDestroy(static_cast<cublasLtHandle_t>(handle));
}

Matmul::Plan &Matmul::plan(const Product &product) {
  auto existing = plans.find(product.what);
  if (existing != plans.end())
    return *existing->second;
  const std::string &what = product.what;
  auto created = std::make_unique<Plan>();

  cublasLtMatmulDesc_t desc = nullptr;
  // Scale type f32; CUBLAS_COMPUTE_32F never lets f32 inputs round to TF32.
  checkLt(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
          what + ": cublasLtMatmulDescCreate");
  created->desc.reset(desc);
  const std::int32_t transA = product.transA, transB = product.transB;
  setDescAttribute(what, desc, CUBLASLT_MATMUL_DESC_TRANSA, transA, "TRANSA");
  setDescAttribute(what, desc, CUBLASLT_MATMUL_DESC_TRANSB, transB, "TRANSB");
  if (product.bias) {
    const std::uint32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const std::int32_t biasType = cudaType(product.abType);
    setDescAttribute(what, desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue,
                     "the bias epilogue");
    setDescAttribute(what, desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, biasType,
                     "the bias type");
    // The heuristic reads the bias pointer for its alignment only. Every bias
    // of this shape shares the plan, so it sees this call's bias moved to an
    // address aligned to kOperandAlignment and no more (never dereferenced).
    const CUdeviceptr leastAligned =
        (product.bias & ~CUdeviceptr{2 * kOperandAlignment - 1}) +
        kOperandAlignment;
    const void *biasPointer = devicePointer(leastAligned);
    setDescAttribute(what, desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, biasPointer,
                     "the bias pointer");
  }
  created->a =
      packedLayout(what, product.abType, product.transA, product.m, product.k);
  created->b =
      packedLayout(what, product.abType, product.transB, product.k, product.n);
  created->d =
      packedLayout(what, product.dType, CUBLAS_OP_N, product.m, product.n);

  cublasLtMatmulPreference_t pref = nullptr;
  checkLt(cublasLtMatmulPreferenceCreate(&pref),
          what + ": cublasLtMatmulPreferenceCreate");
  Preference preference(pref);
  const std::uint64_t workspaceBytes = workspace.bytes();
  setPreference(what, pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                workspaceBytes, "MAX_WORKSPACE_BYTES");
  for (auto attribute : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                         CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                         CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                         CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    setPreference(what, pref, attribute, kOperandAlignment,
                  "MIN_ALIGNMENT_*_BYTES");

  cublasLtMatmulHeuristicResult_t result{};
  int algorithms = 0;
  checkLt(cublasLtMatmulAlgoGetHeuristic(
              static_cast<cublasLtHandle_t>(handle), desc, created->a.get(),
              created->b.get(), created->d.get(), created->d.get(), pref, 1,
              &result, &algorithms),
          what + ": cublasLtMatmulAlgoGetHeuristic");
  if (algorithms == 0)
    throw Error(what + ": cuBLASLt has no algorithm for it (with " +
                std::to_string(workspaceBytes) + " bytes of workspace)");
  checkLt(result.state, what + ": cublasLtMatmulAlgoGetHeuristic's algorithm");
  created->algo = result.algo;
  return *plans.emplace(what, std::move(created)).first->second;
}

void Matmul::run(const Product &product, const Stream &stream) {
  Plan &p = plan(product);
  if (product.bias) {
    const void *biasPointer = devicePointer(product.bias);
    setDescAttribute(product.what, p.desc.get(),
                     CUBLASLT_MATMUL_DESC_BIAS_POINTER, biasPointer,
                     "the bias pointer");
  }
  const float alpha = 1.0f, beta = product.accumulate ? 1.0f : 0.0f;
  void *d = const_cast<void *>(devicePointer(product.d));
  checkLt(cublasLtMatmul(static_cast<cublasLtHandle_t>(handle), p.desc.get(),
                         &alpha, devicePointer(product.a), p.a.get(),
                         devicePointer(product.b), p.b.get(), &beta, d,
                         p.d.get(), d, p.d.get(), &p.algo,
                         const_cast<void *>(devicePointer(workspace.get())),
                         workspace.bytes(), stream.get()),
          product.what + ": cublasLtMatmul");
}

void Matmul::forward(DType dtype, DType outType, const LinearShape &shape,
                     CUdeviceptr x, CUdeviceptr weight, CUdeviceptr bias,
                     CUdeviceptr y, const Stream &stream) {
  Product product;
  product.what =
      describe("forward", dtype, outType, shape, bias != 0 ? ", bias" : "");
  checkShapeAndType(product.what, shape, dtype);
  if (outType != dtype && outType != DType::F32)
    throw Error(product.what + ": y must be " + dtypeName(dtype) + " or f32");
  // cuBLASLt's bias has y's type; the model's biases have the inputs'.
  if (bias != 0 && outType != dtype)
    throw Error(product.what + ": a bias needs y of the inputs' type");
  checkOperand(product.what, "x", x);
  checkOperand(product.what, "weight", weight);
  checkOperand(product.what, "y", y);
  if (bias != 0)
    checkOperand(product.what, "bias", bias);
  // y^T (N x M) = W (op T of W's memory as K x N) x^T (x's memory, K x M).
  product.transA = CUBLAS_OP_T;
  product.transB = CUBLAS_OP_N;
  product.m = shape.out;
  product.n = shape.rows;
  product.k = shape.in;
  product.abType = dtype;
  product.dType = outType;
  product.a = weight;
  product.b = x;
  product.bias = bias;
  product.d = y;
  run(product, stream);
}

void Matmul::backwardInput(DType dtype, const LinearShape &shape,
                           CUdeviceptr dy, CUdeviceptr weight, CUdeviceptr dx,
                           bool accumulate, const Stream &stream) {
  Product product;
  product.what = describe("backward input", dtype, dtype, shape,
                          accumulate ? ", accumulate" : "");
  checkShapeAndType(product.what, shape, dtype);
  checkOperand(product.what, "dy", dy);
  checkOperand(product.what, "weight", weight);
  checkOperand(product.what, "dx", dx);
  // dx^T (K x M) = W^T (W's memory, K x N) dy^T (dy's memory, N x M).
  product.transA = CUBLAS_OP_N;
  product.transB = CUBLAS_OP_N;
  product.m = shape.in;
  product.n = shape.rows;
  product.k = shape.out;
  product.abType = dtype;
  product.dType = dtype;
  product.accumulate = accumulate;
  product.a = weight;
  product.b = dy;
  product.d = dx;
  run(product, stream);
}

void Matmul::backwardWeight(DType dtype, const LinearShape &shape,
                            CUdeviceptr dy, CUdeviceptr x, CUdeviceptr dweight,
                            bool accumulate, const Stream &stream) {
  Product product;
  product.what = describe("backward weight", dtype, DType::F32, shape,
                          accumulate ? ", accumulate" : "");
  checkShapeAndType(product.what, shape, dtype);
  checkOperand(product.what, "dy", dy);
  checkOperand(product.what, "x", x);
  checkOperand(product.what, "dweight", dweight);
  // dW^T (K x N) = x^T (x's memory, K x M) dy (op T of dy's memory, N x M).
  product.transA = CUBLAS_OP_N;
  product.transB = CUBLAS_OP_T;
  product.m = shape.in;
  product.n = shape.out;
  product.k = shape.rows;
  product.abType = dtype;
  product.dType = DType::F32;
  product.accumulate = accumulate;
  product.a = x;
  product.b = dy;
  product.d = dweight;
  run(product, stream);
}

} // namespace fa::train
