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
// The fused products keep those mappings and add an epilogue:
//   forwardGelu        GELU_AUX_BIAS: D = gelu(aux), aux = W x^T + bias, the
//                      pre-activation, N x M like D (its ld N, D's rows)
//   backwardInputGelu  DGELU: D = (W^T dy^T) * gelu'(aux), aux K x M like D;
//                      with a dbias DGELU_BGRAD, whose bias gradient sums
//                      each row of D (K x M) over its M columns: dbias[K],
//                      dx's column sums
//   backwardWeightBias BGRADB: the bias gradient sums op(B) = dy (M x N)
//                      over the product's k = M: dbias[N], dy's column sums
//                      (cuBLASLt takes BGRADB only with op(B) = T, ours)
//
//===----------------------------------------------------------------------===//

#include "fa/train/Matmul.h"

#include "fa/runtime/Error.h"

#include <cublasLt.h>

#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

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

/// cuBLASLt's rule for the GELU epilogues' aux leading dimension (cublasLt.h,
/// CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD): a multiple of 8 elements.
void checkGeluWidth(const std::string &what, const char *size,
                    std::int64_t width) {
  if (width % 8 != 0)
    throw Error(what + ": " + size + "=" + std::to_string(width) +
                " is not a multiple of 8, which cuBLASLt needs of the GELU "
                "input's leading dimension");
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

/// The name of `epilogue` as cublasLt.h spells it, for errors.
const char *epilogueName(cublasLtEpilogue_t epilogue) {
  switch (epilogue) {
  case CUBLASLT_EPILOGUE_DEFAULT:
    return "CUBLASLT_EPILOGUE_DEFAULT";
  case CUBLASLT_EPILOGUE_BIAS:
    return "CUBLASLT_EPILOGUE_BIAS";
  case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
    return "CUBLASLT_EPILOGUE_GELU_AUX_BIAS";
  case CUBLASLT_EPILOGUE_DGELU:
    return "CUBLASLT_EPILOGUE_DGELU";
  case CUBLASLT_EPILOGUE_DGELU_BGRAD:
    return "CUBLASLT_EPILOGUE_DGELU_BGRAD";
  case CUBLASLT_EPILOGUE_BGRADB:
    return "CUBLASLT_EPILOGUE_BGRADB";
  default:
    return "a cuBLASLt epilogue";
  }
}

/// Whether the epilogue writes a bias gradient to the bias pointer (rather
/// than reading a bias from it).
bool writesBiasGradient(cublasLtEpilogue_t epilogue) {
  return epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD ||
         epilogue == CUBLASLT_EPILOGUE_BGRADB;
}

/// `pointer` moved to an address aligned to kOperandAlignment and no more,
/// for the heuristic, which reads the bias and aux pointers for their
/// alignment only (never dereferenced): every call of a plan's shape shares
/// it, so the algorithm must suit the least aligned operand allowed.
const void *leastAligned(CUdeviceptr pointer) {
  return devicePointer((pointer & ~CUdeviceptr{2 * kOperandAlignment - 1}) +
                       kOperandAlignment);
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
/// (+ D when accumulating), op(A) m x k, op(B) k x n, products in f32, then
/// the epilogue: + bias[m] broadcast over columns (BIAS), with GELU
/// (GELU_AUX_BIAS, writing aux), times gelu'(aux) and the bias gradient
/// (DGELU_BGRAD), or the bias gradient of B alone (BGRADB).
struct Matmul::Product {
  std::string what; // Op, types, flags and shape: for errors; the plan key.
  cublasOperation_t transA = CUBLAS_OP_N;
  cublasOperation_t transB = CUBLAS_OP_N;
  std::uint64_t m = 0, n = 0, k = 0;
  DType abType = DType::F32;
  DType dType = DType::F32;
  bool accumulate = false;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  /// The types the bias (or its gradient) may have, preferred first: the
  /// plan takes the first cuBLASLt has an algorithm for.
  std::vector<DType> biasTypes;
  /// The bias or the bias gradient, and the GELU epilogues' pre-activation
  /// (m x n like D, ld m).
  CUdeviceptr a = 0, b = 0, bias = 0, aux = 0, d = 0;
};

/// What a product's every call reuses: its descriptors and algorithm.
struct Matmul::Plan {
  MatmulDesc desc;
  MatrixLayout a, b, d; // C is D (same buffer, type and layout).
  cublasLtMatmulAlgo_t algo{};
  DType biasType = DType::F32; // Of the bias or its gradient, if any.
  /// A bias gradient cuBLASLt writes in bf16 (not the type asked first)
  /// lands here, and widen() multiplies it by `one` into the caller's f32.
  std::unique_ptr<DeviceBuffer> narrowBiasGradient, one;
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

  // One descriptor per bias type to try; a product without a bias tries one.
  const std::vector<DType> biasTypes =
      product.bias ? product.biasTypes : std::vector<DType>{product.dType};
  std::string refusals;
  for (DType biasType : biasTypes) {
    setDescriptor(*created, product, biasType);
    cublasLtMatmulHeuristicResult_t result{};
    int algorithms = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        static_cast<cublasLtHandle_t>(handle), created->desc.get(),
        created->a.get(), created->b.get(), created->d.get(), created->d.get(),
        pref, 1, &result, &algorithms);
    // cuBLASLt answers a combination it lacks with NOT_SUPPORTED (or
    // INVALID_VALUE, as for an aux type other than D's): try the next type.
    const bool refused = status == CUBLAS_STATUS_NOT_SUPPORTED ||
                         status == CUBLAS_STATUS_INVALID_VALUE ||
                         (status == CUBLAS_STATUS_SUCCESS && algorithms == 0);
    if (refused) {
      refusals +=
          std::string(refusals.empty() ? "" : "; ") +
          (product.bias ? std::string("a ") + dtypeName(biasType) + " bias: "
                        : std::string()) +
          (status == CUBLAS_STATUS_SUCCESS ? "no algorithm"
                                           : cublasLtGetStatusName(status));
      continue;
    }
    checkLt(status, what + ": cublasLtMatmulAlgoGetHeuristic");
    checkLt(result.state,
            what + ": cublasLtMatmulAlgoGetHeuristic's algorithm");
    created->algo = result.algo;
    created->biasType = biasType;
    if (product.bias && writesBiasGradient(product.epilogue) &&
        biasType != product.biasTypes.front()) {
      // The gradient comes in bf16: cuBLASLt writes it here, and widen()
      // multiplies it by this 1.0 into the caller's f32 vector.
      const std::size_t length =
          product.epilogue == CUBLASLT_EPILOGUE_BGRADB ? product.n : product.m;
      created->narrowBiasGradient = std::make_unique<DeviceBuffer>(
          "bf16 bias gradient", length * dtypeBytes(biasType));
      created->one =
          std::make_unique<DeviceBuffer>("bf16 1.0", dtypeBytes(biasType));
      created->one->upload(encode({1.0f}, biasType));
    }
    return *plans.emplace(what, std::move(created)).first->second;
  }
  throw Error(what + ": cuBLASLt has no algorithm for it with " +
              epilogueName(product.epilogue) + " and " +
              std::to_string(workspaceBytes) + " bytes of workspace (" +
              refusals + ")");
}

void Matmul::setDescriptor(Plan &plan, const Product &product, DType biasType) {
  const std::string &what = product.what;
  cublasLtMatmulDesc_t desc = nullptr;
  // Scale type f32; CUBLAS_COMPUTE_32F never lets f32 inputs round to TF32.
  checkLt(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
          what + ": cublasLtMatmulDescCreate");
  plan.desc.reset(desc);
  const std::int32_t transA = product.transA, transB = product.transB;
  setDescAttribute(what, desc, CUBLASLT_MATMUL_DESC_TRANSA, transA, "TRANSA");
  setDescAttribute(what, desc, CUBLASLT_MATMUL_DESC_TRANSB, transB, "TRANSB");
  const std::uint32_t epilogue = product.epilogue;
  setDescAttribute(what, desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue,
                   "the epilogue");
  if (product.bias) {
    const std::int32_t type = cudaType(biasType);
    setDescAttribute(what, desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, type,
                     "the bias type");
    const void *biasPointer = leastAligned(product.bias);
    setDescAttribute(what, desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, biasPointer,
                     "the bias pointer");
  }
  if (product.aux) {
    // The pre-activation has D's type (cuBLASLt's default aux type) and
    // layout: its leading dimension is D's rows, a multiple of 8 (checked).
    const std::int64_t auxLd = static_cast<std::int64_t>(product.m);
    setDescAttribute(what, desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, auxLd,
                     "the GELU input's leading dimension");
    const void *auxPointer = leastAligned(product.aux);
    setDescAttribute(what, desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                     auxPointer, "the GELU input pointer");
  }
}

Matmul::Plan &Matmul::run(const Product &product, const Stream &stream) {
  Plan &p = plan(product);
  if (product.bias) {
    const void *biasPointer = p.narrowBiasGradient
                                  ? devicePointer(p.narrowBiasGradient->get())
                                  : devicePointer(product.bias);
    setDescAttribute(product.what, p.desc.get(),
                     CUBLASLT_MATMUL_DESC_BIAS_POINTER, biasPointer,
                     "the bias pointer");
  }
  if (product.aux) {
    const void *auxPointer = devicePointer(product.aux);
    setDescAttribute(product.what, p.desc.get(),
                     CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, auxPointer,
                     "the GELU input pointer");
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
  return p;
}

Matmul::Product Matmul::forwardProduct(const char *op, DType dtype,
                                       DType outType, const LinearShape &shape,
                                       CUdeviceptr x, CUdeviceptr weight,
                                       CUdeviceptr y, const char *flags) {
  Product product;
  product.what = describe(op, dtype, outType, shape, flags);
  checkShapeAndType(product.what, shape, dtype);
  checkOperand(product.what, "x", x);
  checkOperand(product.what, "weight", weight);
  checkOperand(product.what, "y", y);
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
  product.d = y;
  return product;
}

Matmul::Product Matmul::backwardInputProduct(const char *op, DType dtype,
                                             const LinearShape &shape,
                                             CUdeviceptr dy, CUdeviceptr weight,
                                             CUdeviceptr dx,
                                             const char *flags) {
  Product product;
  product.what = describe(op, dtype, dtype, shape, flags);
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
  product.a = weight;
  product.b = dy;
  product.d = dx;
  return product;
}

Matmul::Product Matmul::backwardWeightProduct(const char *op, DType dtype,
                                              const LinearShape &shape,
                                              CUdeviceptr dy, CUdeviceptr x,
                                              CUdeviceptr dweight,
                                              const char *flags) {
  Product product;
  product.what = describe(op, dtype, DType::F32, shape, flags);
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
  product.a = x;
  product.b = dy;
  product.d = dweight;
  return product;
}

void Matmul::forward(DType dtype, DType outType, const LinearShape &shape,
                     CUdeviceptr x, CUdeviceptr weight, CUdeviceptr bias,
                     CUdeviceptr y, const Stream &stream) {
  Product product = forwardProduct("forward", dtype, outType, shape, x, weight,
                                   y, bias != 0 ? ", bias" : "");
  if (outType != dtype && outType != DType::F32)
    throw Error(product.what + ": y must be " + dtypeName(dtype) + " or f32");
  // cuBLASLt's bias has y's type; the model's biases have the inputs'.
  if (bias != 0 && outType != dtype)
    throw Error(product.what + ": a bias needs y of the inputs' type");
  if (bias != 0) {
    checkOperand(product.what, "bias", bias);
    product.epilogue = CUBLASLT_EPILOGUE_BIAS;
    product.biasTypes = {dtype};
    product.bias = bias;
  }
  run(product, stream);
}

void Matmul::backwardInput(DType dtype, const LinearShape &shape,
                           CUdeviceptr dy, CUdeviceptr weight, CUdeviceptr dx,
                           bool accumulate, const Stream &stream) {
  Product product =
      backwardInputProduct("backward input", dtype, shape, dy, weight, dx,
                           accumulate ? ", accumulate" : "");
  product.accumulate = accumulate;
  run(product, stream);
}

void Matmul::backwardWeight(DType dtype, const LinearShape &shape,
                            CUdeviceptr dy, CUdeviceptr x, CUdeviceptr dweight,
                            bool accumulate, const Stream &stream) {
  Product product =
      backwardWeightProduct("backward weight", dtype, shape, dy, x, dweight,
                            accumulate ? ", accumulate" : "");
  product.accumulate = accumulate;
  run(product, stream);
}

void Matmul::forwardGelu(DType dtype, const LinearShape &shape, CUdeviceptr x,
                         CUdeviceptr weight, CUdeviceptr bias,
                         CUdeviceptr preActivation, CUdeviceptr y,
                         const Stream &stream) {
  Product product = forwardProduct("forward GELU", dtype, dtype, shape, x,
                                   weight, y, ", bias");
  checkOperand(product.what, "bias", bias);
  checkOperand(product.what, "preActivation", preActivation);
  checkGeluWidth(product.what, "out", shape.out);
  product.epilogue = CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  product.biasTypes = {dtype};
  product.bias = bias;
  product.aux = preActivation;
  run(product, stream);
}

void Matmul::backwardInputGelu(DType dtype, const LinearShape &shape,
                               CUdeviceptr dy, CUdeviceptr weight,
                               CUdeviceptr preActivation, CUdeviceptr dx,
                               const Stream &stream) {
  Product product = backwardInputProduct("backward input GELU", dtype, shape,
                                         dy, weight, dx, "");
  checkOperand(product.what, "preActivation", preActivation);
  checkGeluWidth(product.what, "in", shape.in);
  product.epilogue = CUBLASLT_EPILOGUE_DGELU;
  product.aux = preActivation;
  run(product, stream);
}

void Matmul::backwardInputGelu(DType dtype, const LinearShape &shape,
                               CUdeviceptr dy, CUdeviceptr weight,
                               CUdeviceptr preActivation, CUdeviceptr dx,
                               CUdeviceptr dbias, const Stream &stream) {
  Product product = backwardInputProduct("backward input GELU", dtype, shape,
                                         dy, weight, dx, ", bias gradient");
  checkOperand(product.what, "preActivation", preActivation);
  checkOperand(product.what, "dbias", dbias);
  checkGeluWidth(product.what, "in", shape.in);
  product.epilogue = CUBLASLT_EPILOGUE_DGELU_BGRAD;
  // f32 first, though cublasLt.h documents the gradient in D's type only.
  product.biasTypes = {DType::F32};
  if (dtype != DType::F32)
    product.biasTypes.push_back(dtype);
  product.bias = dbias;
  product.aux = preActivation;
  const Plan &p = run(product, stream);
  if (p.narrowBiasGradient)
    widen(product.what, p, dbias, product.m, stream);
}

void Matmul::backwardWeightBias(DType dtype, const LinearShape &shape,
                                CUdeviceptr dy, CUdeviceptr x,
                                CUdeviceptr dweight, CUdeviceptr dbias,
                                const Stream &stream) {
  Product product = backwardWeightProduct("backward weight", dtype, shape, dy,
                                          x, dweight, ", bias gradient");
  checkOperand(product.what, "dbias", dbias);
  // The gradient has D's type, f32 (cublasLt.h, BIAS_POINTER), as dweight.
  product.epilogue = CUBLASLT_EPILOGUE_BGRADB;
  product.biasTypes = {DType::F32};
  product.bias = dbias;
  run(product, stream);
}

void Matmul::widen(const std::string &what, const Plan &narrow,
                   CUdeviceptr wide, std::uint64_t length,
                   const Stream &stream) {
  // wide (length x 1, f32) = narrow (length x 1) 1.0 (1 x 1): exact.
  Product product;
  product.what = what + ", widening its " + dtypeName(narrow.biasType) +
                 " bias gradient to f32";
  product.m = length;
  product.n = 1;
  product.k = 1;
  product.abType = narrow.biasType;
  product.dType = DType::F32;
  product.a = narrow.narrowBiasGradient->get();
  product.b = narrow.one->get();
  product.d = wide;
  run(product, stream);
}

} // namespace fa::train
