//===- MatmulGpuTest.cpp - cuBLASLt products against a CPU reference ------===//
//
// Each of Matmul's products, bf16 and f32, against a double-precision CPU
// reference written from the row-major definitions alone (not from the
// column-major mapping Matmul.cpp uses). Inputs are rounded to their type
// before both sides see them, so what remains is f32 accumulation error and
// the output's one rounding. Outputs start poisoned (NaN) unless a product
// accumulates into them, and every product runs twice: the two results must
// be the same bits. Skipped without a GPU.
//
//===----------------------------------------------------------------------===//

#include "fa/train/Matmul.h"

#include "GpuTesting.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

using namespace fa;
using namespace fa::gputest;
using fa::train::LinearShape;
using fa::train::Matmul;

namespace {

constexpr std::uint8_t kNaNBytes = 0xFF;
const LinearShape kOddShape{37, 72, 300};
/// A GPT layer's QKV projection: B*T = 16*256 rows, d_model 384, 3 * 384.
const LinearShape kGptShape{4096, 384, 1152};
/// Its logits: d_model 384 to the byte vocabulary.
const LinearShape kGptHeadShape{4096, 384, 256};

/// out[i][j] = sum_t A(i, t) B(t, j) (+ bias[j]) (+ previous[i][j]) with
/// A(i, t) = a[i * aRow + t * aCol] and B(t, j) = b[t * bRow + j * bCol].
struct Reference {
  const std::vector<float> *a = nullptr;
  std::int64_t aRow = 0, aCol = 0;
  const std::vector<float> *b = nullptr;
  std::int64_t bRow = 0, bCol = 0;
  std::int64_t rows = 0, cols = 0, inner = 0;
  const std::vector<float> *bias = nullptr;
  const std::vector<float> *previous = nullptr;

  /// The exact value of out[i][j] and the sum of its terms' magnitudes,
  /// which bounds the error of any order of f32 additions.
  void at(std::int64_t i, std::int64_t j, double &value,
          double &magnitude) const {
    value = magnitude = 0;
    auto add = [&](double term) {
      value += term;
      magnitude += std::fabs(term);
    };
    for (std::int64_t t = 0; t < inner; ++t)
      add(static_cast<double>((*a)[i * aRow + t * aCol]) *
          (*b)[t * bRow + j * bCol]);
    if (bias)
      add((*bias)[j]);
    if (previous)
      add((*previous)[i * cols + j]);
  }

  /// Every row of small products; of large ones every 61st and the last (a
  /// stride no tile size divides, so the rows fall at every tile position).
  std::vector<std::int64_t> checkedRows() const {
    const std::int64_t stride =
        rows * cols * inner <= (std::int64_t{1} << 25) ? 1 : 61;
    std::vector<std::int64_t> checked;
    for (std::int64_t i = 0; i < rows; i += stride)
      checked.push_back(i);
    if (checked.back() != rows - 1)
      checked.push_back(rows - 1);
    return checked;
  }
};

/// Expects every element of `got` written (finite) and the checked rows
/// within the error of f32 accumulation from `inType` inputs plus one
/// rounding to `outType`.
void expectMatches(const std::vector<float> &got, DType inType, DType outType,
                   const Reference &reference) {
  ASSERT_EQ(got.size(),
            static_cast<std::size_t>(reference.rows * reference.cols));
  std::int64_t unwritten = 0;
  for (float value : got)
    unwritten += !std::isfinite(value);
  EXPECT_EQ(unwritten, 0) << "elements left NaN (poison) or not finite";
  // f32 accumulation, relative to the terms' magnitudes: on tensor cores for
  // bf16 inputs (their adders truncate: on an H100, dx = dy W summing 1152
  // terms erred by up to 3e-4 of their magnitudes), on f32 FMAs for f32
  // inputs.
  const double accumulation = inType == DType::BF16 ? 5e-4 : 1e-5;
  // Round to nearest: half a unit in the last place, relative.
  const double rounding =
      outType == DType::BF16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -24);
  std::int64_t wrong = 0;
  std::ostringstream firstWrong;
  for (std::int64_t i : reference.checkedRows()) {
    for (std::int64_t j = 0; j < reference.cols; ++j) {
      double expected = 0, magnitude = 0;
      reference.at(i, j, expected, magnitude);
      const double actual = got[i * reference.cols + j];
      const double tolerance =
          accumulation * magnitude + rounding * std::fabs(expected);
      if (std::fabs(actual - expected) <= tolerance)
        continue;
      if (wrong++ < 5)
        firstWrong << "\n  [" << i << ", " << j << "] got " << actual
                   << ", expected " << expected << " (tolerance " << tolerance
                   << ")";
    }
  }
  EXPECT_EQ(wrong, 0) << "elements off the reference, the first:"
                      << firstWrong.str();
}

/// A row-major matrix on the device, `offset` bytes into its buffer (to test
/// operands less aligned than cuMemAlloc's), and its values on the host.
struct Matrix {
  std::vector<float> values;
  DType dtype;
  std::size_t offset;
  DeviceBuffer buffer;

  Matrix(const std::string &name, std::vector<float> hostValues, DType type,
         std::size_t offsetBytes)
      : values(std::move(hostValues)), dtype(type), offset(offsetBytes),
        buffer(name, offsetBytes + values.size() * dtypeBytes(type)) {}

  CUdeviceptr get() const { return buffer.get() + offset; }
  void upload() {
    Bytes bytes(offset, 0);
    const Bytes encoded = encode(values, dtype);
    bytes.insert(bytes.end(), encoded.begin(), encoded.end());
    buffer.upload(bytes);
  }
  /// The device's bytes of the matrix (after the offset).
  Bytes download() const {
    Bytes bytes = buffer.download();
    bytes.erase(bytes.begin(), bytes.begin() + offset);
    return bytes;
  }
};

/// Standard normal values rounded to `dtype`, uploaded.
Matrix randomMatrix(const std::string &name, std::int64_t rows,
                    std::int64_t cols, DType dtype, unsigned seed,
                    std::size_t offset = 0) {
  Matrix matrix(name, randomTensor({rows, cols}, dtype, seed).values, dtype,
                offset);
  matrix.upload();
  return matrix;
}

class MatmulGpuTest : public GpuTest {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped())
      return;
    matmul = std::make_unique<Matmul>();
  }

  /// Runs `product` on an output matrix twice, from the same start (poison,
  /// or for `accumulate` the same random values, which the reference adds),
  /// checks the first result and that both are the same bits.
  void checkProduct(const std::function<void(CUdeviceptr)> &product,
                    Reference reference, DType inType, DType outType,
                    bool accumulate, std::size_t offset) {
    const std::vector<float> previous =
        randomTensor({reference.rows, reference.cols}, outType, 99).values;
    reference.previous = accumulate ? &previous : nullptr;
    auto run = [&] {
      Matrix out("output", previous, outType, offset);
      if (accumulate)
        out.upload();
      else
        out.buffer.fill(kNaNBytes, stream->get());
      product(out.get());
      stream->synchronize();
      return out.download();
    };
    const Bytes first = run();
    const Bytes second = run();
    expectMatches(decode(first, outType), inType, outType, reference);
    EXPECT_TRUE(first == second) << "two identical calls gave other bits";
  }

  /// y [M, N] = x [M, K] W^T (+ bias[N]).
  void checkForward(DType dtype, DType outType, const LinearShape &s,
                    bool withBias, std::size_t offset = 0) {
    const Matrix x = randomMatrix("x", s.rows, s.in, dtype, 1, offset);
    const Matrix w = randomMatrix("weight", s.out, s.in, dtype, 2, offset);
    const Matrix bias = randomMatrix("bias", 1, s.out, dtype, 3, offset);
    Reference reference{&x.values, s.in,   1,     &w.values, 1,
                        s.in,      s.rows, s.out, s.in};
    reference.bias = withBias ? &bias.values : nullptr;
    checkProduct(
        [&](CUdeviceptr y) {
          matmul->forward(dtype, outType, s, x.get(), w.get(),
                          withBias ? bias.get() : 0, y, *stream);
        },
        reference, dtype, outType, false, offset);
  }

  /// dx [M, K] = dy [M, N] W [N, K] (+ dx).
  void checkBackwardInput(DType dtype, const LinearShape &s, bool accumulate,
                          std::size_t offset = 0) {
    const Matrix dy = randomMatrix("dy", s.rows, s.out, dtype, 4, offset);
    const Matrix w = randomMatrix("weight", s.out, s.in, dtype, 5, offset);
    const Reference reference{&dy.values, s.out,  1,    &w.values, s.in,
                              1,          s.rows, s.in, s.out};
    checkProduct(
        [&](CUdeviceptr dx) {
          matmul->backwardInput(dtype, s, dy.get(), w.get(), dx, accumulate,
                                *stream);
        },
        reference, dtype, dtype, accumulate, offset);
  }

  /// dW [N, K] (f32) = dy [M, N]^T x [M, K] (+ dW).
  void checkBackwardWeight(DType dtype, const LinearShape &s, bool accumulate,
                           std::size_t offset = 0) {
    const Matrix dy = randomMatrix("dy", s.rows, s.out, dtype, 6, offset);
    const Matrix x = randomMatrix("x", s.rows, s.in, dtype, 7, offset);
    const Reference reference{&dy.values, 1,     s.out, &x.values, s.in,
                              1,          s.out, s.in,  s.rows};
    checkProduct(
        [&](CUdeviceptr dw) {
          matmul->backwardWeight(dtype, s, dy.get(), x.get(), dw, accumulate,
                                 *stream);
        },
        reference, dtype, DType::F32, accumulate, offset);
  }

  /// The message of the fa::Error `call` throws ("" when it throws none).
  static std::string errorOf(const std::function<void()> &call) {
    try {
      call();
    } catch (const Error &error) {
      return error.what();
    }
    return "";
  }

  std::unique_ptr<Matmul> matmul;
};

TEST_F(MatmulGpuTest, ForwardBf16OddSizes) {
  checkForward(DType::BF16, DType::BF16, kOddShape, false);
  checkForward(DType::BF16, DType::BF16, kOddShape, true);
}

TEST_F(MatmulGpuTest, ForwardF32OddSizes) {
  checkForward(DType::F32, DType::F32, kOddShape, false);
  checkForward(DType::F32, DType::F32, kOddShape, true);
}

TEST_F(MatmulGpuTest, ForwardBf16ToF32Logits) {
  checkForward(DType::BF16, DType::F32, kOddShape, false);
  checkForward(DType::BF16, DType::F32, kGptHeadShape, false);
}

TEST_F(MatmulGpuTest, ForwardGptSize) {
  checkForward(DType::BF16, DType::BF16, kGptShape, true);
  checkForward(DType::BF16, DType::BF16, kGptShape, false);
  checkForward(DType::F32, DType::F32, kGptShape, true);
}

TEST_F(MatmulGpuTest, BackwardInputOddSizes) {
  for (DType dtype : {DType::BF16, DType::F32})
    for (bool accumulate : {false, true})
      checkBackwardInput(dtype, kOddShape, accumulate);
}

TEST_F(MatmulGpuTest, BackwardInputGptSize) {
  checkBackwardInput(DType::BF16, kGptShape, false);
  checkBackwardInput(DType::BF16, kGptShape, true);
  checkBackwardInput(DType::BF16, kGptHeadShape, false);
  checkBackwardInput(DType::F32, kGptShape, false);
}

TEST_F(MatmulGpuTest, BackwardWeightOddSizes) {
  for (DType dtype : {DType::BF16, DType::F32})
    for (bool accumulate : {false, true})
      checkBackwardWeight(dtype, kOddShape, accumulate);
}

TEST_F(MatmulGpuTest, BackwardWeightGptSize) {
  checkBackwardWeight(DType::BF16, kGptShape, false);
  checkBackwardWeight(DType::BF16, kGptShape, true);
  checkBackwardWeight(DType::BF16, kGptHeadShape, true);
  checkBackwardWeight(DType::F32, kGptShape, false);
}

// A plan is chosen at the first call of its shape (here with cuMemAlloc's
// 256-byte alignment) and reused for operands aligned to only 16 bytes, as
// the flat parameter array's tensors are.
TEST_F(MatmulGpuTest, PlansServeSixteenByteAlignedOperands) {
  for (std::size_t offset : {0, 16, 48}) {
    SCOPED_TRACE("operands " + std::to_string(offset) + " bytes in");
    checkForward(DType::BF16, DType::BF16, kGptShape, true, offset);
    checkBackwardInput(DType::BF16, kGptShape, true, offset);
    checkBackwardWeight(DType::BF16, kGptShape, true, offset);
  }
}

TEST_F(MatmulGpuTest, RejectsWhatItCannotRun) {
  const LinearShape s{8, 16, 24};
  DeviceBuffer buffer("operands", 4096);
  const CUdeviceptr p = buffer.get();
  auto forward = [&](DType dtype, DType outType, const LinearShape &shape,
                     CUdeviceptr x, CUdeviceptr bias) {
    return errorOf([&] {
      matmul->forward(dtype, outType, shape, x, p, bias, p, *stream);
    });
  };
  std::string message = forward(DType::BF16, DType::F32, s, p, p);
  EXPECT_NE(message.find("matrix product forward (bf16 -> f32, bias) rows=8 "
                         "in=16 out=24: a bias needs y of the inputs' type"),
            std::string::npos)
      << message;
  message = forward(DType::BF16, DType::BF16, s, p + 2, 0);
  EXPECT_NE(message.find("x (0x"), std::string::npos) << message;
  EXPECT_NE(message.find("is not 16-byte aligned"), std::string::npos)
      << message;
  message = forward(DType::F16, DType::F16, s, p, 0);
  EXPECT_NE(message.find("inputs must be bf16 or f32"), std::string::npos)
      << message;
  message = forward(DType::BF16, DType::BF16, {0, 16, 24}, p, 0);
  EXPECT_NE(message.find("every size must be positive"), std::string::npos)
      << message;
  message = errorOf(
      [&] { matmul->backwardWeight(DType::BF16, s, p, p, 0, true, *stream); });
  EXPECT_NE(message.find("matrix product backward weight (bf16 -> f32, "
                         "accumulate) rows=8 in=16 out=24: dweight is null"),
            std::string::npos)
      << message;
}

} // namespace
