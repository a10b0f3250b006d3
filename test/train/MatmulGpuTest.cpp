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
// The fused products (GELU and bias-gradient epilogues) are checked the same
// way, every output of theirs (pre-activation, GELU, dx, bias gradients),
// against the tanh GELU of CpuGpt.cpp; their tolerances add what the
// pre-activation's error does through gelu and an f32 tanh good to 2^-11
// (tanh.approx.f32's bound). With exact pre-activations, one test tells the
// tanh form from the erf form, which that bound alone cannot.
//
//===----------------------------------------------------------------------===//

#include "fa/train/Matmul.h"

#include "GpuTesting.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
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
/// Rows no tile divides, and outputs a multiple of 8 (the GELU input's
/// leading dimension must be): the MLP's up projection and its way back.
const LinearShape kOddUpShape{200, 96, 320};
const LinearShape kOddDownShape{200, 320, 96};
/// The GPT's MLP at 4x width: fc [4096, 384] -> [4096, 1536] and fc_proj.
const LinearShape kGptUpShape{4096, 384, 1536};
const LinearShape kGptDownShape{4096, 1536, 384};

/// f32 accumulation, relative to the terms' magnitudes: on tensor cores for
/// bf16 inputs (their adders truncate: on an H100, dx = dy W summing 1152
/// terms erred by up to 3e-4 of their magnitudes), on f32 FMAs for f32
/// inputs.
double accumulationError(DType inType) {
  return inType == DType::BF16 ? 5e-4 : 1e-5;
}

/// Round to nearest: half a unit in the last place, relative.
double roundingError(DType outType) {
  return outType == DType::BF16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -24);
}

//===-- GELU, tanh form, as CpuGpt.cpp's (file-local there) -------------===//

constexpr double kGeluScale = 0.79788456080286535588; // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;

double gelu(double u) {
  return 0.5 * u * (1.0 + std::tanh(kGeluScale * (u + kGeluCubic * u * u * u)));
}

/// d/du = 0.5 (1 + tanh a) + 0.5 u (1 - tanh^2 a) sqrt(2/pi) (1 + 3 c u^2).
double geluSlope(double u) {
  const double th = std::tanh(kGeluScale * (u + kGeluCubic * u * u * u));
  return 0.5 * (1.0 + th) + 0.5 * u * (1.0 - th * th) * kGeluScale *
                                (1.0 + 3.0 * kGeluCubic * u * u);
}

/// The exact (erf) GELU and its slope: what the tanh form must not be.
double geluErf(double u) {
  return 0.5 * u * (1.0 + std::erf(u / std::sqrt(2.0)));
}
double geluErfSlope(double u) {
  return 0.5 * (1.0 + std::erf(u / std::sqrt(2.0))) +
         u * std::exp(-0.5 * u * u) * 0.5 * kGeluScale; // 1/sqrt(2 pi)
}

/// |gelu'| is at most 1.129 (at u = +-1.42), so gelu moves an input error by
/// at most this factor.
constexpr double kGeluSlopeBound = 1.13;
/// An f32 tanh's error allowed: tanh.approx.f32's (PTX ISA), which cuBLASLt's
/// epilogue may use; f32's own tanhf is far closer.
const double kTanhError = std::ldexp(1.0, -11);

/// The error of gelu(u) from tanh off by kTanhError: 0.5 |u| kTanhError.
double geluTanhError(double u) { return 0.5 * std::fabs(u) * kTanhError; }

/// The error of gelu'(u) from it: d gelu'/d tanh = 0.5 - u tanh(a)
/// sqrt(2/pi) (1 + 3 c u^2), at most 0.5 + |u| sqrt(2/pi) (1 + 3 c u^2).
double geluSlopeTanhError(double u) {
  const double a = std::fabs(u);
  return (0.5 + a * kGeluScale * (1.0 + 3.0 * kGeluCubic * a * a)) * kTanhError;
}

/// Where values lie between two forms of a function, fit by least squares:
/// actual = tanhForm + t (erfForm - tanhForm) + rest; t is about 0 for the
/// tanh form and 1 for the erf form. An approximate tanh's errors, which do
/// not follow the forms' difference, move t little.
class FormFit {
public:
  void add(double actual, double tanhForm, double erfForm) {
    const double gap = erfForm - tanhForm;
    along += (actual - tanhForm) * gap;
    gapSquares += gap * gap;
  }
  double towardErf() const { return along / gapSquares; }

private:
  double along = 0, gapSquares = 0;
};

/// Counts values off their expected ones and keeps the first few for the
/// message; a NaN (an element never written) is always off.
class Mismatches {
public:
  explicit Mismatches(std::string what) : what(std::move(what)) {}
  void check(std::int64_t i, std::int64_t j, double actual, double expected,
             double tolerance) {
    if (std::fabs(actual - expected) <= tolerance)
      return;
    if (wrong++ < 5)
      first << "\n  [" << i << ", " << j << "] got " << actual << ", expected "
            << expected << " (tolerance " << tolerance << ")";
  }
  void expectNone() const {
    EXPECT_EQ(wrong, 0) << what << ": elements off the reference, the first:"
                        << first.str();
  }

private:
  std::string what;
  std::int64_t wrong = 0;
  std::ostringstream first;
};

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
  const double accumulation = accumulationError(inType);
  const double rounding = roundingError(outType);
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
  std::string name;
  std::vector<float> values;
  DType dtype;
  std::size_t offset;
  DeviceBuffer buffer;

  Matrix(const std::string &matrixName, std::vector<float> hostValues,
         DType type, std::size_t offsetBytes)
      : name(matrixName), values(std::move(hostValues)), dtype(type),
        offset(offsetBytes),
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

/// A rows x cols output of `dtype` (its host values unused).
Matrix outputMatrix(const std::string &name, std::int64_t rows,
                    std::int64_t cols, DType dtype, std::size_t offset = 0) {
  return Matrix(name, std::vector<float>(rows * cols), dtype, offset);
}

/// `values` as a matrix of `dtype` (exact in it), uploaded.
Matrix givenMatrix(const std::string &name, std::vector<float> values,
                   DType dtype) {
  Matrix matrix(name, std::move(values), dtype, 0);
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

  /// Runs `product` twice, every output poisoned (NaN) before each run;
  /// expects both runs to leave the same bits and returns the first run's
  /// values of each output.
  std::vector<std::vector<float>>
  runTwice(const std::function<void()> &product,
           const std::vector<Matrix *> &outputs) {
    std::vector<Bytes> first(outputs.size());
    for (int run = 0; run < 2; ++run) {
      for (Matrix *output : outputs)
        output->buffer.fill(kNaNBytes, stream->get());
      product();
      stream->synchronize();
      for (std::size_t o = 0; o < outputs.size(); ++o) {
        Bytes bytes = outputs[o]->download();
        if (run == 0)
          first[o] = std::move(bytes);
        else
          EXPECT_TRUE(bytes == first[o])
              << outputs[o]->name << ": two identical calls gave other bits";
      }
    }
    std::vector<std::vector<float>> values;
    for (std::size_t o = 0; o < outputs.size(); ++o)
      values.push_back(decode(first[o], outputs[o]->dtype));
    return values;
  }

  /// preActivation = x W^T + b (a forward with a bias) and y = gelu of it.
  void checkForwardGelu(DType dtype, const LinearShape &s,
                        std::size_t offset = 0) {
    const Matrix x = randomMatrix("x", s.rows, s.in, dtype, 11, offset);
    const Matrix w = randomMatrix("weight", s.out, s.in, dtype, 12, offset);
    const Matrix bias = randomMatrix("bias", 1, s.out, dtype, 13, offset);
    Matrix pre = outputMatrix("preActivation", s.rows, s.out, dtype, offset);
    Matrix y = outputMatrix("y", s.rows, s.out, dtype, offset);
    const auto got = runTwice(
        [&] {
          matmul->forwardGelu(dtype, s, x.get(), w.get(), bias.get(), pre.get(),
                              y.get(), *stream);
        },
        {&pre, &y});
    Reference reference{&x.values, s.in,   1,     &w.values, 1,
                        s.in,      s.rows, s.out, s.in};
    reference.bias = &bias.values;
    expectMatches(got[0], dtype, dtype, reference);
    const double rounding = roundingError(dtype);
    Mismatches mismatches("y = gelu(x W^T + b)");
    for (std::int64_t i : reference.checkedRows()) {
      for (std::int64_t j = 0; j < s.out; ++j) {
        double u = 0, magnitude = 0;
        reference.at(i, j, u, magnitude);
        // The epilogue's u: accumulation error, and maybe rounded to dtype.
        const double uError =
            accumulationError(dtype) * magnitude + rounding * std::fabs(u);
        const double geluError =
            kGeluSlopeBound * uError + geluTanhError(std::fabs(u) + uError);
        const double expected = gelu(u);
        mismatches.check(i, j, got[1][i * s.out + j], expected,
                         geluError +
                             rounding * (std::fabs(expected) + geluError));
      }
    }
    mismatches.expectNone();
  }

  /// dx = (dy W) * gelu'(preActivation), and with `withBias` dbias = dx's
  /// column sums (DGELU_BGRAD; DGELU without).
  void checkBackwardInputGelu(DType dtype, const LinearShape &s,
                              std::size_t offset = 0, bool withBias = true) {
    const Matrix dy = randomMatrix("dy", s.rows, s.out, dtype, 14, offset);
    const Matrix w = randomMatrix("weight", s.out, s.in, dtype, 15, offset);
    const Matrix pre =
        randomMatrix("preActivation", s.rows, s.in, dtype, 16, offset);
    Matrix dx = outputMatrix("dx", s.rows, s.in, dtype, offset);
    Matrix dbias = outputMatrix("dbias", 1, s.in, DType::F32, offset);
    const auto got = runTwice(
        [&] {
          if (withBias)
            matmul->backwardInputGelu(dtype, s, dy.get(), w.get(), pre.get(),
                                      dx.get(), dbias.get(), *stream);
          else
            matmul->backwardInputGelu(dtype, s, dy.get(), w.get(), pre.get(),
                                      dx.get(), *stream);
        },
        withBias ? std::vector<Matrix *>{&dx, &dbias}
                 : std::vector<Matrix *>{&dx});
    const Reference reference{&dy.values, s.out,  1,    &w.values, s.in,
                              1,          s.rows, s.in, s.out};
    const double rounding = roundingError(dtype);
    Mismatches dxMismatches("dx = (dy W) * gelu'(preActivation)");
    for (std::int64_t i : reference.checkedRows()) {
      for (std::int64_t j = 0; j < s.in; ++j) {
        double g = 0, magnitude = 0;
        reference.at(i, j, g, magnitude);
        const double u = pre.values[i * s.in + j];
        const double expected = g * geluSlope(u);
        const double error =
            accumulationError(dtype) * magnitude * std::fabs(geluSlope(u)) +
            std::fabs(g) * geluSlopeTanhError(u);
        // Two roundings to dtype: cuBLASLt's epilogue rounds dy W before
        // the product with gelu' (seen on an H100: bf16 results 1.6 half
        // ulps off), as the unfused path does, whose dy W is stored first.
        dxMismatches.check(i, j, got[0][i * s.in + j], expected,
                           error +
                               rounding * (2 * std::fabs(expected) + error));
      }
    }
    dxMismatches.expectNone();
    if (withBias)
      expectColumnSums(got[1], got[0], s.rows, s.in, dtype, "dbias");
  }

  /// sums (f32) = the column sums of dx as the product wrote it. The
  /// epilogue may have summed dx before its rounding to `dtype`: those
  /// roundings, each within roundingError(dtype) of its element and
  /// independent of one another, are allowed six times their root sum of
  /// squares (a sum of worst cases would hide a missing tile of rows). Then
  /// f32 summation, and one rounding to `dtype` (a bf16 bias gradient
  /// widened to f32).
  static void expectColumnSums(const std::vector<float> &sums,
                               const std::vector<float> &dx, std::int64_t rows,
                               std::int64_t cols, DType dtype,
                               const std::string &what) {
    const double rounding = roundingError(dtype);
    Mismatches mismatches(what + " = the column sums of dx");
    for (std::int64_t j = 0; j < cols; ++j) {
      double sum = 0, magnitude = 0, squares = 0;
      for (std::int64_t i = 0; i < rows; ++i) {
        const double value = dx[i * cols + j];
        sum += value;
        magnitude += std::fabs(value);
        squares += value * value;
      }
      const double tolerance = 6.0 * rounding * std::sqrt(squares) +
                               accumulationError(DType::F32) * magnitude +
                               rounding * std::fabs(sum);
      mismatches.check(0, j, sums[j], sum, tolerance);
    }
    mismatches.expectNone();
  }

  /// dW [N, K] (f32) = dy^T x as checkBackwardWeight; dbias f32 [N] = dy's
  /// column sums.
  void checkBackwardWeightBias(DType dtype, const LinearShape &s,
                               std::size_t offset = 0) {
    const Matrix dy = randomMatrix("dy", s.rows, s.out, dtype, 17, offset);
    const Matrix x = randomMatrix("x", s.rows, s.in, dtype, 18, offset);
    Matrix dw = outputMatrix("dweight", s.out, s.in, DType::F32, offset);
    Matrix dbias = outputMatrix("dbias", 1, s.out, DType::F32, offset);
    const auto got = runTwice(
        [&] {
          matmul->backwardWeightBias(dtype, s, dy.get(), x.get(), dw.get(),
                                     dbias.get(), *stream);
        },
        {&dw, &dbias});
    const Reference reference{&dy.values, 1,     s.out, &x.values, s.in,
                              1,          s.out, s.in,  s.rows};
    expectMatches(got[0], dtype, DType::F32, reference);
    Mismatches mismatches("dbias = the column sums of dy");
    for (std::int64_t j = 0; j < s.out; ++j) {
      double sum = 0, magnitude = 0;
      for (std::int64_t i = 0; i < s.rows; ++i) {
        sum += dy.values[i * s.out + j];
        magnitude += std::fabs(dy.values[i * s.out + j]);
      }
      mismatches.check(0, j, got[1][j], sum,
                       accumulationError(dtype) * magnitude +
                           roundingError(DType::F32) * std::fabs(sum));
    }
    mismatches.expectNone();
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

TEST_F(MatmulGpuTest, ForwardGeluOddSizes) {
  checkForwardGelu(DType::BF16, kOddUpShape);
  checkForwardGelu(DType::F32, kOddUpShape);
}

TEST_F(MatmulGpuTest, ForwardGeluGptSize) {
  checkForwardGelu(DType::BF16, kGptUpShape);
  checkForwardGelu(DType::F32, kGptUpShape);
}

TEST_F(MatmulGpuTest, BackwardInputGeluOddSizes) {
  checkBackwardInputGelu(DType::BF16, kOddDownShape);
  checkBackwardInputGelu(DType::F32, kOddDownShape);
}

TEST_F(MatmulGpuTest, BackwardInputGeluGptSize) {
  checkBackwardInputGelu(DType::BF16, kGptDownShape);
  checkBackwardInputGelu(DType::F32, kGptDownShape);
}

// gelu' alone (DGELU), the bias gradient left to fc's dW product: what
// fa-run train's gelu-backward epilogue runs.
TEST_F(MatmulGpuTest, BackwardInputGeluWithoutBiasGradient) {
  for (const LinearShape &shape : {kOddDownShape, kGptDownShape}) {
    checkBackwardInputGelu(DType::BF16, shape, 0, /*withBias=*/false);
    checkBackwardInputGelu(DType::F32, shape, 0, /*withBias=*/false);
  }
  checkBackwardInputGelu(DType::BF16, kOddDownShape, 16, /*withBias=*/false);
}

TEST_F(MatmulGpuTest, BackwardWeightBiasOddSizes) {
  for (DType dtype : {DType::BF16, DType::F32})
    for (const LinearShape &shape : {kOddShape, kOddUpShape, kOddDownShape})
      checkBackwardWeightBias(dtype, shape);
}

TEST_F(MatmulGpuTest, BackwardWeightBiasGptSize) {
  for (const LinearShape &shape : {kGptShape, kGptUpShape, kGptDownShape})
    checkBackwardWeightBias(DType::BF16, shape);
  checkBackwardWeightBias(DType::F32, kGptUpShape);
}

// With x W^T exactly 0 (W zero) the pre-activations are the bias, a grid
// over [-6, 6), and with dy W exactly 1 the backward's dx is gelu' of the
// given pre-activations: the epilogues' GELU alone, in f32. Within the
// tanh bound of the tanh form, and nearer it than the erf form, which the
// bound alone would let pass (the forms differ by at most 4.7e-4 in gelu,
// 8.7e-4 in gelu', 1.3e-4 and 2.4e-4 on average over the grid).
TEST_F(MatmulGpuTest, EpilogueGeluIsTheTanhForm) {
  const DType f32 = DType::F32;
  constexpr std::int64_t kGrid = 384, kRows = 64, kOther = 32;
  auto gridValue = [](std::int64_t index) {
    return -6.0f + static_cast<float>(index % kGrid) / 32.0f;
  };
  const double slack = std::ldexp(1.0, -22); // f32 evaluation, relative.
  {
    SCOPED_TRACE("forward: gelu");
    const LinearShape s{kRows, kOther, kGrid};
    std::vector<float> grid(kGrid);
    for (std::int64_t j = 0; j < kGrid; ++j)
      grid[j] = gridValue(j);
    const Matrix x = randomMatrix("x", s.rows, s.in, f32, 21);
    const Matrix w =
        givenMatrix("weight", std::vector<float>(s.out * s.in), f32);
    const Matrix bias = givenMatrix("bias", grid, f32);
    Matrix pre = outputMatrix("preActivation", s.rows, s.out, f32);
    Matrix y = outputMatrix("y", s.rows, s.out, f32);
    const auto got = runTwice(
        [&] {
          matmul->forwardGelu(f32, s, x.get(), w.get(), bias.get(), pre.get(),
                              y.get(), *stream);
        },
        {&pre, &y});
    Mismatches preMismatches("preActivation = b exactly");
    Mismatches geluMismatches("y = gelu(b), tanh form");
    FormFit fit;
    for (std::int64_t i = 0; i < s.rows; ++i) {
      for (std::int64_t j = 0; j < s.out; ++j) {
        const double u = grid[j], actual = got[1][i * s.out + j];
        preMismatches.check(i, j, got[0][i * s.out + j], u, 0);
        geluMismatches.check(i, j, actual, gelu(u),
                             geluTanhError(u) + slack * std::fabs(gelu(u)));
        fit.add(actual, gelu(u), geluErf(u));
      }
    }
    preMismatches.expectNone();
    geluMismatches.expectNone();
    EXPECT_LT(std::fabs(fit.towardErf()), 0.5)
        << "cuBLASLt's GELU lies " << fit.towardErf()
        << " of the way from the tanh form to the erf form";
  }
  {
    SCOPED_TRACE("backward: gelu' and its column sums");
    // dx [rows, grid] = dy [rows, other] W [other, grid] * gelu'(pre), with
    // dy's first column and W's first row 1 and the rest 0.
    const LinearShape s{kRows, kGrid, kOther};
    std::vector<float> dyValues(s.rows * s.out), wValues(s.out * s.in);
    for (std::int64_t i = 0; i < s.rows; ++i)
      dyValues[i * s.out] = 1.0f;
    for (std::int64_t j = 0; j < s.in; ++j)
      wValues[j] = 1.0f;
    std::vector<float> preValues(s.rows * s.in);
    for (std::int64_t i = 0; i < s.rows; ++i)
      for (std::int64_t j = 0; j < s.in; ++j)
        preValues[i * s.in + j] = gridValue(j + 7 * i);
    const Matrix dy = givenMatrix("dy", dyValues, f32);
    const Matrix w = givenMatrix("weight", wValues, f32);
    const Matrix pre = givenMatrix("preActivation", preValues, f32);
    Matrix dx = outputMatrix("dx", s.rows, s.in, f32);
    Matrix dbias = outputMatrix("dbias", 1, s.in, f32);
    const auto got = runTwice(
        [&] {
          matmul->backwardInputGelu(f32, s, dy.get(), w.get(), pre.get(),
                                    dx.get(), dbias.get(), *stream);
        },
        {&dx, &dbias});
    Mismatches slopeMismatches("dx = gelu'(preActivation), tanh form");
    Mismatches sumMismatches("dbias = the column sums of gelu'");
    FormFit fit;
    for (std::int64_t j = 0; j < s.in; ++j) {
      double sum = 0, tolerance = 0;
      for (std::int64_t i = 0; i < s.rows; ++i) {
        const double u = preValues[i * s.in + j];
        const double actual = got[0][i * s.in + j];
        const double error =
            geluSlopeTanhError(u) + slack * std::fabs(geluSlope(u));
        slopeMismatches.check(i, j, actual, geluSlope(u), error);
        fit.add(actual, geluSlope(u), geluErfSlope(u));
        sum += geluSlope(u);
        tolerance += error + slack * std::fabs(geluSlope(u)) * s.rows;
      }
      sumMismatches.check(0, j, got[1][j], sum, tolerance);
    }
    slopeMismatches.expectNone();
    sumMismatches.expectNone();
    EXPECT_LT(std::fabs(fit.towardErf()), 0.5)
        << "cuBLASLt's GELU slope lies " << fit.towardErf()
        << " of the way from the tanh form to the erf form";
  }
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
    checkForwardGelu(DType::BF16, kOddUpShape, offset);
    checkBackwardInputGelu(DType::BF16, kOddDownShape, offset);
    checkBackwardWeightBias(DType::BF16, kOddUpShape, offset);
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
  // The GELU input's leading dimension (D's rows) must be a multiple of 8.
  message = errorOf([&] {
    matmul->forwardGelu(DType::BF16, {8, 16, 20}, p, p, p, p, p, *stream);
  });
  EXPECT_NE(message.find("matrix product forward GELU (bf16 -> bf16, bias) "
                         "rows=8 in=16 out=20: out=20 is not a multiple of 8"),
            std::string::npos)
      << message;
  message = errorOf([&] {
    matmul->backwardInputGelu(DType::BF16, {8, 20, 16}, p, p, p, p, p, *stream);
  });
  EXPECT_NE(message.find("matrix product backward input GELU (bf16 -> bf16, "
                         "bias gradient) rows=8 in=20 out=16: in=20 is not a "
                         "multiple of 8"),
            std::string::npos)
      << message;
  message = errorOf([&] {
    matmul->backwardInputGelu(DType::BF16, {8, 20, 16}, p, p, p, p, *stream);
  });
  EXPECT_NE(message.find("matrix product backward input GELU (bf16 -> bf16) "
                         "rows=8 in=20 out=16: in=20 is not a multiple of 8"),
            std::string::npos)
      << message;
  message = errorOf([&] {
    matmul->backwardInputGelu(DType::BF16, s, p, p, 0, p, p, *stream);
  });
  EXPECT_NE(message.find("preActivation is null"), std::string::npos)
      << message;
  message = errorOf(
      [&] { matmul->backwardWeightBias(DType::BF16, s, p, p, p, 0, *stream); });
  EXPECT_NE(message.find("matrix product backward weight (bf16 -> f32, bias "
                         "gradient) rows=8 in=16 out=24: dbias is null"),
            std::string::npos)
      << message;
}

} // namespace
