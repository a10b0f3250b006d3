//===- TrainKernelsGpuTest.cpp - The training kernels against the CPU -----===//
//
// Every TrainKernels entry, bf16 and f32, against a straightforward CPU
// computation of its definition (TrainKernels.h) on random inputs whose sizes
// are not multiples of any block size. Inputs are rounded to their type before
// both sides see them. Outputs start poisoned (every byte 0xFF, NaN) unless the
// kernel accumulates into them, so an element left unwritten fails. Copies
// and single f32 additions are checked bit for bit; sums and transcendental
// functions within f32 rounding (and bf16's, for bf16 outputs). The
// reductions run twice and must give the same bits. Skipped without a GPU.
//
//===----------------------------------------------------------------------===//

#include "fa/train/TrainKernels.h"

#include "GpuChecks.h"
#include "GpuTesting.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace fa;
using namespace fa::gputest;
using namespace fa::traintest;
using fa::train::AdamWStep;
using fa::train::TrainKernels;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// --- Inputs and outputs ------------------------------------------------------

/// n standard normal values rounded to `dtype`, times `scale` (a power of two,
/// so they stay exact).
std::vector<float> normals(std::int64_t n, DType dtype, unsigned seed,
                           float scale = 1) {
  std::vector<float> values = randomTensor({n}, dtype, seed).values;
  for (float &value : values)
    value *= scale;
  return values;
}

std::vector<std::int32_t> randomTokens(std::int64_t n, std::int64_t vocab,
                                       unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int32_t> token(
      0, static_cast<std::int32_t>(vocab - 1));
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(n));
  for (std::int32_t &value : tokens)
    value = token(rng);
  return tokens;
}

template <typename T>
DeviceBuffer deviceCopy(const std::string &name, const std::vector<T> &values) {
  DeviceBuffer buffer(name,
                      std::max<std::size_t>(values.size(), 1) * sizeof(T));
  Bytes bytes(buffer.bytes());
  std::memcpy(bytes.data(), values.data(), values.size() * sizeof(T));
  buffer.upload(bytes);
  return buffer;
}

DeviceBuffer deviceCopy(const std::string &name,
                        const std::vector<float> &values, DType dtype) {
  if (values.empty())
    return DeviceBuffer(name, dtypeBytes(dtype));
  return upload(name, HostTensor{{std::int64_t(values.size())}, values}, dtype);
}

std::vector<float> hostCopy(const DeviceBuffer &buffer, DType dtype) {
  return decode(buffer.download(), dtype);
}

// --- Checks
// -------------------------------------------------------------------

/// Bounds of relative + absolute size around `expected`.
std::vector<double> boundsOf(const std::vector<double> &expected,
                             double relative, double absolute) {
  std::vector<double> bound(expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i)
    bound[i] = relative * std::fabs(expected[i]) + absolute;
  return bound;
}

void expectNear(const std::vector<float> &actual,
                const std::vector<double> &expected, double relative,
                double absolute, const std::string &what) {
  expectWithin(actual, expected, boundsOf(expected, relative, absolute), what);
}

/// Expects the same bits (so any NaN fails, as expected values never are).
void expectSame(const std::vector<float> &actual,
                const std::vector<float> &expected, const std::string &what) {
  std::vector<double> wide(expected.begin(), expected.end());
  expectWithin(actual, wide, std::vector<double>(wide.size(), 0.0), what);
}

/// The relative error of an output rounded to `dtype` after f32 math whose
/// own error is `f32Relative`.
double roundingOf(DType dtype, double f32Relative) {
  return dtype == DType::BF16 ? 1.0 / 256 : f32Relative;
}

/// The relative bound on an f32 sum of a few thousand terms, times the sum
/// of their magnitudes.
constexpr double kSumRelative = 1e-5;

/// `run` returns an output's bytes; it runs twice, on fresh inputs from the
/// same seeds, and the bytes must match.
void expectDeterministic(const std::function<Bytes()> &run,
                         const std::string &what) {
  Bytes first = run();
  Bytes second = run();
  EXPECT_TRUE(first == second) << what << ": two runs differ";
}

// --- Fixtures ---------------------------------------------------------------

/// The kernels loaded into device 0's context; skipped without a GPU.
class TrainKernelsGpuTest : public GpuTest {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped())
      return;
    kernels = std::make_unique<TrainKernels>();
  }

  std::unique_ptr<TrainKernels> kernels;
};

/// The same, once per activation dtype.
struct EmbeddingShape {
  std::int64_t batch, seq, channels, vocab;
  std::int64_t rows() const { return batch * seq; }
};

class TrainKernelsTest : public TrainKernelsGpuTest,
                         public ::testing::WithParamInterface<DType> {
protected:
  DType dtype() const { return GetParam(); }
  void expectEmbeddingForward(const EmbeddingShape &s, std::int64_t positions,
                              unsigned seed, const std::string &what);
  /// What a check is about, with the dtype: "gelu forward (bf16)".
  std::string label(const std::string &what) const {
    return what + " (" + dtypeName(dtype()) + ")";
  }
};

// --- Embedding
// ----------------------------------------------------------------

/// The last: GPT-2's padded vocabulary, most of whose rows no token hits.
const EmbeddingShape kEmbeddingShapes[] = {
    {5, 101, 300, 100}, {5, 101, 300, 256}, {3, 37, 7, 256}, {3, 37, 7, 50304}};
constexpr std::int64_t kExtraPositions = 3; // wpe rows beyond seq.

/// The embedding forward of random tokens and tables (`positions` wpe rows,
/// at least seq) against the CPU, bit for bit.
void TrainKernelsTest::expectEmbeddingForward(const EmbeddingShape &s,
                                              std::int64_t positions,
                                              unsigned seed,
                                              const std::string &what) {
  const std::int64_t c = s.channels;
  std::vector<std::int32_t> tokens = randomTokens(s.rows(), s.vocab, seed);
  std::vector<float> wte = normals(s.vocab * c, dtype(), seed + 1);
  std::vector<float> wpe = normals(positions * c, dtype(), seed + 2);
  DeviceBuffer tokensDevice = deviceCopy("tokens", tokens);
  DeviceBuffer wteDevice = deviceCopy("wte", wte, dtype());
  DeviceBuffer wpeDevice = deviceCopy("wpe", wpe, dtype());
  DeviceBuffer x = poisoned("x", s.rows() * c, dtype(), *stream);
  kernels->embeddingForward(dtype(), tokensDevice.get(), wteDevice.get(),
                            wpeDevice.get(), x.get(), s.batch, s.seq, c,
                            *stream);
  stream->synchronize();
  std::vector<float> expected(static_cast<std::size_t>(s.rows() * c));
  for (std::int64_t row = 0; row < s.rows(); ++row)
    for (std::int64_t j = 0; j < c; ++j)
      expected[row * c + j] = roundToDType(
          wte[tokens[row] * c + j] + wpe[(row % s.seq) * c + j], dtype());
  expectSame(hostCopy(x, dtype()), expected, label(what));
}

TEST_P(TrainKernelsTest, EmbeddingForward) {
  for (const EmbeddingShape &s : kEmbeddingShapes)
    expectEmbeddingForward(s, s.seq + kExtraPositions, 1,
                           "x, vocab " + std::to_string(s.vocab));
}

/// embeddingBackward's outputs for one shape, from the same seeds each time.
struct EmbeddingBackwardRun {
  std::vector<float> dwte, dwpe;
};

EmbeddingBackwardRun runEmbeddingBackward(const TrainKernels &kernels,
                                          DType dtype, const EmbeddingShape &s,
                                          bool accumulate,
                                          const std::vector<float> &dwteStart,
                                          const std::vector<float> &dwpeStart,
                                          const Stream &stream) {
  DeviceBuffer tokens =
      deviceCopy("tokens", randomTokens(s.rows(), s.vocab, 4));
  DeviceBuffer dx =
      deviceCopy("dx", normals(s.rows() * s.channels, dtype, 5), dtype);
  DeviceBuffer dwte = deviceCopy("dwte", dwteStart, DType::F32);
  DeviceBuffer dwpe = deviceCopy("dwpe", dwpeStart, DType::F32);
  DeviceBuffer seen = poisoned("seen", s.vocab, DType::F32, stream);
  kernels.embeddingBackward(dtype, tokens.get(), dx.get(), dwte.get(),
                            dwpe.get(), s.batch, s.seq, s.channels, s.vocab,
                            accumulate, seen.get(), stream);
  stream.synchronize();
  return {hostCopy(dwte, DType::F32), hostCopy(dwpe, DType::F32)};
}

TEST_P(TrainKernelsTest, EmbeddingBackward) {
  for (const EmbeddingShape &s : kEmbeddingShapes)
    for (bool accumulate : {false, true}) {
      const std::int64_t c = s.channels, positions = s.seq + kExtraPositions;
      const std::string what = "vocab " + std::to_string(s.vocab) +
                               (accumulate ? ", accumulating" : "");
      // dwte starts random when accumulating, else NaN; dwpe is always
      // overwritten (NaN), and its rows past seq start random and must be
      // left alone.
      std::vector<float> dwteStart = normals(s.vocab * c, DType::F32, 6);
      std::vector<float> dwpeStart = normals(positions * c, DType::F32, 7);
      if (!accumulate)
        std::fill(dwteStart.begin(), dwteStart.end(), kNaN);
      std::fill(dwpeStart.begin(), dwpeStart.begin() + s.seq * c, kNaN);
      EmbeddingBackwardRun run = runEmbeddingBackward(
          *kernels, dtype(), s, accumulate, dwteStart, dwpeStart, *stream);

      std::vector<std::int32_t> tokens = randomTokens(s.rows(), s.vocab, 4);
      std::vector<float> dx = normals(s.rows() * c, dtype(), 5);
      std::vector<double> dwte(dwteStart.size(), 0.0),
          dwteMagnitude(dwteStart.size(), 0.0);
      std::vector<double> dwpe(dwpeStart.size(), 0.0),
          dwpeMagnitude(dwpeStart.size(), 0.0);
      for (std::int64_t row = 0; row < s.rows(); ++row)
        for (std::int64_t j = 0; j < c; ++j) {
          const double value = dx[row * c + j];
          dwte[tokens[row] * c + j] += value;
          dwteMagnitude[tokens[row] * c + j] += std::fabs(value);
          dwpe[(row % s.seq) * c + j] += value;
          dwpeMagnitude[(row % s.seq) * c + j] += std::fabs(value);
        }
      std::vector<double> dwteBound(dwte.size()), dwpeBound(dwpe.size());
      for (std::size_t i = 0; i < dwte.size(); ++i) {
        dwte[i] += accumulate ? dwteStart[i] : 0.0;
        dwteBound[i] = kSumRelative * (dwteMagnitude[i] + std::fabs(dwte[i]));
      }
      for (std::size_t i = 0; i < dwpe.size(); ++i) {
        const bool untouched = i >= static_cast<std::size_t>(s.seq * c);
        dwpe[i] += untouched ? dwpeStart[i] : 0.0;
        dwpeBound[i] =
            untouched ? 0.0
                      : kSumRelative * (dwpeMagnitude[i] + std::fabs(dwpe[i]));
      }
      expectWithin(run.dwte, dwte, dwteBound, label("dwte, " + what));
      expectWithin(run.dwpe, dwpe, dwpeBound, label("dwpe, " + what));
    }
}

// --- Heads
// --------------------------------------------------------------------

struct HeadShape {
  std::int64_t batch = 2, seq = 37, heads = 5, headDim = 36;
  std::int64_t channels() const { return heads * headDim; }
  std::int64_t elements() const { return batch * seq * channels(); }
  /// [b, h, t, d] in a head-major tensor.
  std::int64_t headIndex(std::int64_t b, std::int64_t t, std::int64_t h,
                         std::int64_t d) const {
    return ((b * heads + h) * seq + t) * headDim + d;
  }
  /// [b, t, part * C + h * D + d] in a packed tensor of `parts` parts.
  std::int64_t packedIndex(std::int64_t b, std::int64_t t, std::int64_t part,
                           std::int64_t h, std::int64_t d,
                           std::int64_t parts) const {
    return (b * seq + t) * parts * channels() + part * channels() +
           h * headDim + d;
  }
};

/// The packed tensor of the head-major `parts` (the reference of both
/// directions: every packed element comes from exactly one head element).
std::vector<float> packedOf(const HeadShape &s,
                            const std::vector<std::vector<float>> &parts) {
  const std::int64_t count = static_cast<std::int64_t>(parts.size());
  std::vector<float> packed(static_cast<std::size_t>(count * s.elements()));
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t t = 0; t < s.seq; ++t)
      for (std::int64_t part = 0; part < count; ++part)
        for (std::int64_t h = 0; h < s.heads; ++h)
          for (std::int64_t d = 0; d < s.headDim; ++d)
            packed[s.packedIndex(b, t, part, h, d, count)] =
                parts[part][s.headIndex(b, t, h, d)];
  return packed;
}

/// The head-major parts of a packed tensor.
std::vector<std::vector<float>> partsOf(const HeadShape &s,
                                        const std::vector<float> &packed,
                                        std::int64_t count) {
  std::vector<std::vector<float>> parts(
      count, std::vector<float>(static_cast<std::size_t>(s.elements())));
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t t = 0; t < s.seq; ++t)
      for (std::int64_t part = 0; part < count; ++part)
        for (std::int64_t h = 0; h < s.heads; ++h)
          for (std::int64_t d = 0; d < s.headDim; ++d)
            parts[part][s.headIndex(b, t, h, d)] =
                packed[s.packedIndex(b, t, part, h, d, count)];
  return parts;
}

/// D = 36 moves element by element in bf16 (not a whole number of 16-byte
/// chunks) and in chunks of 4 in f32; D = 64 in chunks of 8 and 4.
const HeadShape kHeadShapes[] = {HeadShape{}, HeadShape{2, 37, 3, 64}};

TEST_P(TrainKernelsTest, SplitAndJoinHeads) {
  for (const HeadShape &s : kHeadShapes) {
    SCOPED_TRACE("head_dim " + std::to_string(s.headDim));
    std::vector<float> qkv = normals(3 * s.elements(), dtype(), 8);
    DeviceBuffer qkvDevice = deviceCopy("qkv", qkv, dtype());
    DeviceBuffer q = poisoned("q", s.elements(), dtype(), *stream);
    DeviceBuffer k = poisoned("k", s.elements(), dtype(), *stream);
    DeviceBuffer v = poisoned("v", s.elements(), dtype(), *stream);
    kernels->splitHeads(dtype(), qkvDevice.get(), q.get(), k.get(), v.get(),
                        s.batch, s.seq, s.heads, s.headDim, *stream);
    stream->synchronize();
    std::vector<std::vector<float>> expected = partsOf(s, qkv, 3);
    expectSame(hostCopy(q, dtype()), expected[0], label("q"));
    expectSame(hostCopy(k, dtype()), expected[1], label("k"));
    expectSame(hostCopy(v, dtype()), expected[2], label("v"));

    std::vector<std::vector<float>> grads = {
        normals(s.elements(), dtype(), 9), normals(s.elements(), dtype(), 10),
        normals(s.elements(), dtype(), 11)};
    DeviceBuffer dq = deviceCopy("dq", grads[0], dtype());
    DeviceBuffer dk = deviceCopy("dk", grads[1], dtype());
    DeviceBuffer dv = deviceCopy("dv", grads[2], dtype());
    DeviceBuffer dqkv = poisoned("dqkv", 3 * s.elements(), dtype(), *stream);
    kernels->joinHeads(dtype(), dq.get(), dk.get(), dv.get(), dqkv.get(),
                       s.batch, s.seq, s.heads, s.headDim, *stream);
    stream->synchronize();
    expectSame(hostCopy(dqkv, dtype()), packedOf(s, grads), label("dqkv"));
  }
}

TEST_P(TrainKernelsTest, MergeAndUnmergeHeads) {
  for (const HeadShape &s : kHeadShapes) {
    SCOPED_TRACE("head_dim " + std::to_string(s.headDim));
    std::vector<float> y = normals(s.elements(), dtype(), 12);
    DeviceBuffer yDevice = deviceCopy("y", y, dtype());
    DeviceBuffer merged = poisoned("merged", s.elements(), dtype(), *stream);
    kernels->mergeHeads(dtype(), yDevice.get(), merged.get(), s.batch, s.seq,
                        s.heads, s.headDim, *stream);
    stream->synchronize();
    expectSame(hostCopy(merged, dtype()), packedOf(s, {y}), label("merged"));

    std::vector<float> dmerged = normals(s.elements(), dtype(), 13);
    DeviceBuffer dmergedDevice = deviceCopy("dmerged", dmerged, dtype());
    DeviceBuffer dy = poisoned("dy", s.elements(), dtype(), *stream);
    kernels->unmergeHeads(dtype(), dmergedDevice.get(), dy.get(), s.batch,
                          s.seq, s.heads, s.headDim, *stream);
    stream->synchronize();
    expectSame(hostCopy(dy, dtype()), partsOf(s, dmerged, 1)[0], label("dy"));
  }
}

/// More rows than grid.y could hold (rows go in grid.x).
TEST_P(TrainKernelsTest, RowKernelsTakeManyRows) {
  const EmbeddingShape s{7, 10001, 3, 5};
  expectEmbeddingForward(s, s.seq, 14, "x");

  const HeadShape h{7, 10001, 1, 3};
  std::vector<float> y = normals(h.elements(), dtype(), 17);
  DeviceBuffer yDevice = deviceCopy("y", y, dtype());
  DeviceBuffer merged = poisoned("merged", h.elements(), dtype(), *stream);
  kernels->mergeHeads(dtype(), yDevice.get(), merged.get(), h.batch, h.seq,
                      h.heads, h.headDim, *stream);
  stream->synchronize();
  expectSame(hostCopy(merged, dtype()), packedOf(h, {y}), label("merged"));
}

// --- Elementwise
// --------------------------------------------------------------

constexpr std::int64_t kElements = 300 * 37 + 5;

const double kGeluScale = std::sqrt(2.0 / std::acos(-1.0)); // sqrt(2/pi)

double gelu(double u) {
  const double z = kGeluScale * (u + 0.044715 * u * u * u);
  return 0.5 * u * (1.0 + std::tanh(z));
}

double geluDerivative(double u) {
  const double th = std::tanh(kGeluScale * (u + 0.044715 * u * u * u));
  return 0.5 * (1.0 + th) + 0.5 * u * (1.0 - th * th) * kGeluScale *
                                (1.0 + 3.0 * 0.044715 * u * u);
}

TEST_P(TrainKernelsTest, Gelu) {
  std::vector<float> u = normals(kElements, dtype(), 18, 4.0f);
  std::vector<float> dg = normals(kElements, dtype(), 19);
  DeviceBuffer uDevice = deviceCopy("u", u, dtype());
  DeviceBuffer dgDevice = deviceCopy("dg", dg, dtype());
  DeviceBuffer g = poisoned("g", kElements, dtype(), *stream);
  DeviceBuffer du = poisoned("du", kElements, dtype(), *stream);
  kernels->geluForward(dtype(), uDevice.get(), g.get(), kElements, *stream);
  kernels->geluBackward(dtype(), uDevice.get(), dgDevice.get(), du.get(),
                        kElements, *stream);
  stream->synchronize();

  // Where tanh(z) nears -1, f32's 1 + tanh(z) and 1 - tanh^2(z) keep only a
  // few bits: an absolute error of a few f32 ulps of the terms' size, which
  // the |u| and |dg| scaled bounds allow.
  const double relative = roundingOf(dtype(), 1e-5);
  std::vector<double> expectedG(u.size()), expectedDu(u.size());
  std::vector<double> boundG(u.size()), boundDu(u.size());
  for (std::size_t i = 0; i < u.size(); ++i) {
    expectedG[i] = gelu(u[i]);
    expectedDu[i] = dg[i] * geluDerivative(u[i]);
    boundG[i] =
        relative * std::fabs(expectedG[i]) + 1e-6 * (1 + std::fabs(u[i]));
    boundDu[i] = relative * std::fabs(expectedDu[i]) + 1e-5 * std::fabs(dg[i]);
  }
  expectWithin(hostCopy(g, dtype()), expectedG, boundG, label("g"));
  expectWithin(hostCopy(du, dtype()), expectedDu, boundDu, label("du"));
}

TEST_P(TrainKernelsTest, Add) {
  std::vector<float> a = normals(kElements, dtype(), 20);
  std::vector<float> b = normals(kElements, dtype(), 21);
  std::vector<float> expected(a.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    expected[i] = roundToDType(a[i] + b[i], dtype());
  DeviceBuffer aDevice = deviceCopy("a", a, dtype());
  DeviceBuffer bDevice = deviceCopy("b", b, dtype());
  DeviceBuffer out = poisoned("out", kElements, dtype(), *stream);
  kernels->add(dtype(), aDevice.get(), bDevice.get(), out.get(), kElements,
               *stream);
  // In place: a += b.
  kernels->add(dtype(), aDevice.get(), bDevice.get(), aDevice.get(), kElements,
               *stream);
  // Pointers one element past a 16-byte boundary move element by element
  // instead of in 16-byte chunks: out[1:] = b[1:] + b[1:].
  DeviceBuffer shifted = poisoned("shifted", kElements, dtype(), *stream);
  const CUdeviceptr step = dtypeBytes(dtype());
  kernels->add(dtype(), bDevice.get() + step, bDevice.get() + step,
               shifted.get() + step, kElements - 1, *stream);
  stream->synchronize();
  expectSame(hostCopy(out, dtype()), expected, label("out"));
  expectSame(hostCopy(aDevice, dtype()), expected, label("a += b"));
  std::vector<float> doubled = hostCopy(shifted, dtype());
  for (std::size_t i = 1; i < b.size(); ++i)
    EXPECT_EQ(doubled[i], roundToDType(b[i] + b[i], dtype()))
        << label("shifted") << i;
}

/// out = a + drop(b) (a, b and out as in Add) against activationDropoutFactor
/// (Dropout.h) bit for bit: the mask is the CPU's, element by element, in
/// 16-byte chunks and one at a time; a = 0 drops alone; the share dropped is
/// p's; another site or step draws another mask.
TEST_P(TrainKernelsTest, DropoutAdd) {
  const fa::train::DropoutDraw draw{0.2f, 0x123456789ABCDEFull, 7};
  const std::uint32_t site = 3;
  std::vector<float> a = normals(kElements, dtype(), 23);
  std::vector<float> b = normals(kElements, dtype(), 24);
  DeviceBuffer aDevice = deviceCopy("a", a, dtype());
  DeviceBuffer bDevice = deviceCopy("b", b, dtype());
  DeviceBuffer out = poisoned("out", kElements, dtype(), *stream);
  DeviceBuffer dropped = poisoned("dropped", kElements, dtype(), *stream);
  DeviceBuffer shifted = poisoned("shifted", kElements, dtype(), *stream);
  DeviceBuffer otherStep = poisoned("other step", kElements, dtype(), *stream);
  kernels->dropoutAdd(dtype(), aDevice.get(), bDevice.get(), out.get(),
                      kElements, draw, site, *stream);
  kernels->dropoutAdd(dtype(), 0, bDevice.get(), dropped.get(), kElements, draw,
                      site, *stream);
  // Unaligned: element by element, the mask still that of each index.
  const CUdeviceptr step = dtypeBytes(dtype());
  kernels->dropoutAdd(dtype(), aDevice.get() + step, bDevice.get() + step,
                      shifted.get() + step, kElements - 1, draw, site, *stream);
  fa::train::DropoutDraw later = draw;
  later.step += 1;
  kernels->dropoutAdd(dtype(), 0, bDevice.get(), otherStep.get(), kElements,
                      later, site, *stream);
  stream->synchronize();

  std::vector<float> expected(a.size()), expectedDropped(a.size()),
      expectedShifted(a.size());
  std::int64_t zeros = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const float factor = fa::train::activationDropoutFactor(draw, site, i);
    zeros += factor == 0.0f;
    expectedDropped[i] = roundToDType(factor * b[i], dtype());
    // The kernel's a + factor * b is one fused multiply-add in f32.
    expected[i] = roundToDType(std::fma(factor, b[i], a[i]), dtype());
    if (i > 0)
      expectedShifted[i] = roundToDType(
          std::fma(fa::train::activationDropoutFactor(draw, site, i - 1), b[i],
                   a[i]),
          dtype());
  }
  expectSame(hostCopy(out, dtype()), expected, label("a + drop(b)"));
  expectSame(hostCopy(dropped, dtype()), expectedDropped, label("drop(b)"));
  std::vector<float> shiftedHost = hostCopy(shifted, dtype());
  for (std::size_t i = 1; i < a.size(); ++i)
    ASSERT_EQ(shiftedHost[i], expectedShifted[i]) << label("unaligned") << i;
  const double share = static_cast<double>(zeros) / kElements;
  EXPECT_NEAR(share, draw.p, 0.01) << label("dropped share");
  std::vector<float> other = hostCopy(otherStep, dtype());
  std::int64_t differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    differ += (other[i] == 0.0f) != (expectedDropped[i] == 0.0f);
  EXPECT_GT(differ, kElements / 10) << label("the next step's mask");
  EXPECT_NE(errorMessage([&] {
              kernels->dropoutAdd(dtype(), 0, bDevice.get(), out.get(), 1,
                                  {1.0f, 0, 0}, site, *stream);
            }).find("p must be in [0, 1)"),
            std::string::npos);
}

TEST_P(TrainKernelsTest, CastFromF32) {
  // More elements than the grid's threads, so the grid-stride loop wraps.
  const std::int64_t n = 2'500'001;
  std::vector<float> values = normals(n, DType::F32, 22, 64.0f);
  std::vector<float> expected(values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    expected[i] = roundToDType(values[i], dtype());
  DeviceBuffer valuesDevice = deviceCopy("values", values, DType::F32);
  DeviceBuffer out = poisoned("out", n, dtype(), *stream);
  kernels->castFromF32(dtype(), valuesDevice.get(), out.get(), n, *stream);
  stream->synchronize();
  expectSame(hostCopy(out, dtype()), expected, label("out"));
}

// --- Bias gradient ----------------------------------------------------------

struct BiasShape {
  std::int64_t rows, cols;
};

/// One row span; many spans; the span count capped; no rows at all; rows of
/// whole 16-byte chunks (bf16 and f32: chunked loads), with several column
/// blocks and a partial last one (2312).
const BiasShape kBiasShapes[] = {{37, 300}, {5000, 300}, {100000, 33},
                                 {0, 5},    {4099, 768}, {300, 2312}};

std::vector<float> runBiasGradient(const TrainKernels &kernels, DType dtype,
                                   const BiasShape &s, bool accumulate,
                                   const std::vector<float> &start,
                                   const Stream &stream) {
  DeviceBuffer dy =
      deviceCopy("dy", normals(s.rows * s.cols, dtype, 23), dtype);
  DeviceBuffer dbias = deviceCopy("dbias", start, DType::F32);
  kernels.biasGradient(dtype, dy.get(), dbias.get(), s.rows, s.cols, accumulate,
                       stream);
  stream.synchronize();
  return hostCopy(dbias, DType::F32);
}

TEST_P(TrainKernelsTest, BiasGradient) {
  for (const BiasShape &s : kBiasShapes)
    for (bool accumulate : {false, true}) {
      std::vector<float> start = normals(s.cols, DType::F32, 24);
      if (!accumulate)
        std::fill(start.begin(), start.end(), kNaN);
      std::vector<float> dbias =
          runBiasGradient(*kernels, dtype(), s, accumulate, start, *stream);

      std::vector<float> dy = normals(s.rows * s.cols, dtype(), 23);
      std::vector<double> expected(s.cols, 0.0), bound(s.cols, 0.0);
      for (std::int64_t i = 0; i < s.rows; ++i)
        for (std::int64_t j = 0; j < s.cols; ++j) {
          expected[j] += dy[i * s.cols + j];
          bound[j] += std::fabs(dy[i * s.cols + j]);
        }
      for (std::int64_t j = 0; j < s.cols; ++j) {
        expected[j] += accumulate ? start[j] : 0.0;
        bound[j] = kSumRelative * (bound[j] + std::fabs(expected[j]));
      }
      expectWithin(dbias, expected, bound,
                   label("dbias " + std::to_string(s.rows) + " x " +
                         std::to_string(s.cols) +
                         (accumulate ? ", accumulating" : "")));
    }
}

// --- Cross-entropy ----------------------------------------------------------

constexpr std::int64_t kLossRows = 37;

struct CrossEntropyRun {
  std::vector<float> losses, dlogits;
};

/// Losses and (when `withGradient`) dlogits of kLossRows random rows, logits
/// N(0, 16).
CrossEntropyRun runCrossEntropy(const TrainKernels &kernels, DType dtype,
                                std::int64_t vocab,
                                const std::vector<std::int32_t> &targets,
                                bool withGradient, const Stream &stream) {
  DeviceBuffer logits = deviceCopy(
      "logits", normals(kLossRows * vocab, DType::F32, 25, 4.0f), DType::F32);
  DeviceBuffer targetsDevice = deviceCopy("targets", targets);
  DeviceBuffer losses = poisoned("losses", kLossRows, DType::F32, stream);
  DeviceBuffer dlogits = poisoned("dlogits", kLossRows * vocab, dtype, stream);
  kernels.crossEntropy(dtype, logits.get(), targetsDevice.get(), losses.get(),
                       withGradient ? dlogits.get() : 0, kLossRows, vocab,
                       1.0f / kLossRows, stream);
  stream.synchronize();
  return {hostCopy(losses, DType::F32), hostCopy(dlogits, dtype)};
}

TEST_P(TrainKernelsTest, CrossEntropy) {
  // Quads (vocab % 4 == 0: 256, 100, 50304, GPT-2's padded vocabulary) and
  // single elements (1001, 50257).
  for (std::int64_t vocab : {256, 100, 1000, 1001, 50257, 50304})
    for (bool withGradient : {true, false}) {
      std::vector<std::int32_t> targets = randomTokens(kLossRows, vocab, 26);
      CrossEntropyRun run = runCrossEntropy(*kernels, dtype(), vocab, targets,
                                            withGradient, *stream);

      std::vector<float> logits =
          normals(kLossRows * vocab, DType::F32, 25, 4.0f);
      std::vector<double> losses(kLossRows), dlogits(kLossRows * vocab);
      for (std::int64_t i = 0; i < kLossRows; ++i) {
        const float *x = &logits[i * vocab];
        double max = x[0], sum = 0;
        for (std::int64_t j = 0; j < vocab; ++j)
          max = std::max(max, double{x[j]});
        for (std::int64_t j = 0; j < vocab; ++j)
          sum += std::exp(x[j] - max);
        const double lse = max + std::log(sum);
        losses[i] = lse - x[targets[i]];
        for (std::int64_t j = 0; j < vocab; ++j)
          dlogits[i * vocab + j] =
              (std::exp(x[j] - lse) - (j == targets[i] ? 1.0 : 0.0)) /
              kLossRows;
      }
      // dlogits: p - 1 at a dominant target loses f32 bits to cancellation,
      // hence the absolute term.
      const std::string what = "vocab " + std::to_string(vocab);
      expectNear(run.losses, losses, 1e-5, 1e-5, label("losses, " + what));
      if (withGradient)
        expectNear(run.dlogits, dlogits, roundingOf(dtype(), 2e-5), 5e-8,
                   label("dlogits, " + what));
    }
}

TEST_P(TrainKernelsTest, CrossEntropyOfABadTargetIsNaN) {
  const std::int64_t vocab = 100;
  std::vector<std::int32_t> targets = randomTokens(kLossRows, vocab, 27);
  targets[3] = -1;
  targets[4] = vocab;
  CrossEntropyRun run =
      runCrossEntropy(*kernels, dtype(), vocab, targets, true, *stream);
  for (std::int64_t i = 0; i < kLossRows; ++i)
    EXPECT_EQ(std::isnan(run.losses[i]), i == 3 || i == 4) << "row " << i;
}

// --- Sums
// ---------------------------------------------------------------------

const std::int64_t kSumSizes[] = {0, 1, 300, 4097, 5'000'003};

float runReduction(const TrainKernels &kernels, bool squares,
                   const std::vector<float> &values, const Stream &stream) {
  const std::int64_t n = static_cast<std::int64_t>(values.size());
  DeviceBuffer valuesDevice = deviceCopy("values", values, DType::F32);
  DeviceBuffer result = poisoned("result", 1, DType::F32, stream);
  DeviceBuffer workspace =
      poisoned("workspace", TrainKernels::reductionWorkspaceFloats(n),
               DType::F32, stream);
  if (squares)
    kernels.sumOfSquares(valuesDevice.get(), result.get(), n, workspace.get(),
                         stream);
  else
    kernels.sum(valuesDevice.get(), result.get(), n, workspace.get(), stream);
  stream.synchronize();
  return hostCopy(result, DType::F32)[0];
}

TEST_F(TrainKernelsGpuTest, SumAndSumOfSquares) {
  for (std::int64_t n : kSumSizes) {
    std::vector<float> values = normals(n, DType::F32, 28);
    double sum = 0, magnitude = 0, squares = 0;
    for (float value : values) {
      sum += value;
      magnitude += std::fabs(value);
      squares += double{value} * value;
    }
    const std::string what = "n = " + std::to_string(n);
    expectWithin({runReduction(*kernels, false, values, *stream)}, {sum},
                 {kSumRelative * magnitude}, "sum, " + what);
    expectWithin({runReduction(*kernels, true, values, *stream)}, {squares},
                 {kSumRelative * squares}, "sum of squares, " + what);
  }
}

// --- AdamW
// --------------------------------------------------------------------

constexpr std::int64_t kParameters = 1037;

/// What adamW reads and writes, uploaded from fixed seeds.
struct AdamWState {
  std::vector<float> params = normals(kParameters, DType::F32, 30);
  std::vector<float> grads = normals(kParameters, DType::F32, 31);
  std::vector<float> m = normals(kParameters, DType::F32, 32, 0.125f);
  std::vector<float> v = squares(normals(kParameters, DType::F32, 33, 0.125f));
  std::vector<std::uint8_t> decay = decayMask();

  static std::vector<float> squares(std::vector<float> values) {
    for (float &value : values)
      value *= value;
    return values;
  }
  static std::vector<std::uint8_t> decayMask() {
    std::vector<std::uint8_t> mask(kParameters);
    for (std::int64_t i = 0; i < kParameters; ++i)
      mask[i] = (i * 7 / 3) % 2;
    return mask;
  }
};

struct AdamWResult {
  std::vector<float> params, m, v, working;
};

/// `values` after `offset` leading zeros.
template <typename T>
std::vector<T> shifted(std::vector<T> values, std::int64_t offset) {
  values.insert(values.begin(), offset, T{});
  return values;
}

/// One step from AdamWState with normSquared (when given) on the device,
/// every array starting `offset` elements into its buffer (1: no pointer is
/// 16-byte aligned, so the kernel takes the elements one at a time).
AdamWResult runAdamW(const TrainKernels &kernels, DType dtype,
                     const AdamWStep &hyper, const float *normSquared,
                     bool withWorking, const Stream &stream,
                     std::int64_t offset = 0) {
  AdamWState state;
  DeviceBuffer params =
      deviceCopy("params", shifted(state.params, offset), DType::F32);
  DeviceBuffer grads =
      deviceCopy("grads", shifted(state.grads, offset), DType::F32);
  DeviceBuffer m = deviceCopy("m", shifted(state.m, offset), DType::F32);
  DeviceBuffer v = deviceCopy("v", shifted(state.v, offset), DType::F32);
  DeviceBuffer decay = deviceCopy("decay", shifted(state.decay, offset));
  DeviceBuffer norm = deviceCopy(
      "normSquared", std::vector<float>{normSquared ? *normSquared : 0.0f},
      DType::F32);
  DeviceBuffer working =
      poisoned("working", kParameters + offset, dtype, stream);
  const CUdeviceptr f32Offset = offset * sizeof(float);
  fa::train::adamW(kernels, dtype, hyper, params.get() + f32Offset,
                   grads.get() + f32Offset, m.get() + f32Offset,
                   v.get() + f32Offset, decay.get() + offset,
                   normSquared ? norm.get() : 0,
                   withWorking ? working.get() + offset * dtypeBytes(dtype) : 0,
                   kParameters, stream);
  stream.synchronize();
  auto from = [&](const DeviceBuffer &buffer, DType type) {
    std::vector<float> values = hostCopy(buffer, type);
    return std::vector<float>(values.begin() + offset, values.end());
  };
  return {from(params, DType::F32), from(m, DType::F32), from(v, DType::F32),
          from(working, dtype)};
}

AdamWStep adamHyper(float maxNorm) {
  AdamWStep hyper;
  hyper.lr = 1e-3f;
  hyper.maxNorm = maxNorm;
  hyper.step = 3;
  return hyper;
}

TEST_P(TrainKernelsTest, AdamW) {
  struct Case {
    float maxNorm;
    float normSquared;
    bool withWorking;
    double clip;
  };
  const Case cases[] = {{1.0f, 25.0f, true, 0.2},  // Clipped: norm 5.
                        {1.0f, 0.25f, false, 1.0}, // Under maxNorm.
                        {1.0f, 0.0f, true, 1.0},   // A zero gradient norm.
                        {0.0f, -1.0f, true, 1.0}}; // No clipping, no norm.
  for (const Case &c : cases) {
    const AdamWStep hyper = adamHyper(c.maxNorm);
    AdamWResult result = runAdamW(*kernels, dtype(), hyper,
                                  c.maxNorm > 0 ? &c.normSquared : nullptr,
                                  c.withWorking, *stream);

    AdamWState s;
    std::vector<double> params(kParameters), m(kParameters), v(kParameters);
    const double b1 = hyper.beta1, b2 = hyper.beta2;
    for (std::int64_t i = 0; i < kParameters; ++i) {
      const double g = s.grads[i] * c.clip;
      m[i] = b1 * s.m[i] + (1 - b1) * g;
      v[i] = b2 * s.v[i] + (1 - b2) * g * g;
      const double mHat = m[i] / (1 - std::pow(b1, hyper.step));
      const double vHat = v[i] / (1 - std::pow(b2, hyper.step));
      params[i] = s.params[i] -
                  double{hyper.lr} *
                      (mHat / (std::sqrt(vHat) + hyper.eps) +
                       double{hyper.weightDecay} * s.decay[i] * s.params[i]);
    }
    const std::string what = "maxNorm " + std::to_string(c.maxNorm) +
                             ", norm^2 " + std::to_string(c.normSquared);
    expectNear(result.m, m, 1e-5, 1e-7, label("m, " + what));
    expectNear(result.v, v, 1e-5, 1e-9, label("v, " + what));
    expectNear(result.params, params, 1e-5, 1e-7, label("params, " + what));
    if (!c.withWorking)
      continue;
    std::vector<float> working = result.params;
    roundToDType(working, dtype());
    expectSame(result.working, working, label("working, " + what));
  }
}

// The kernel moves 16-byte chunks where every pointer allows (the flat
// arrays) and single elements elsewhere (a ZeRO-1 shard may start anywhere):
// both give the same bits.
TEST_P(TrainKernelsTest, AdamWChunksMatchSingleElements) {
  const AdamWStep hyper = adamHyper(1.0f);
  const float normSquared = 25.0f;
  AdamWResult chunks =
      runAdamW(*kernels, dtype(), hyper, &normSquared, true, *stream);
  AdamWResult elements = runAdamW(*kernels, dtype(), hyper, &normSquared, true,
                                  *stream, /*offset=*/1);
  expectSame(chunks.params, elements.params, label("params"));
  expectSame(chunks.m, elements.m, label("m"));
  expectSame(chunks.v, elements.v, label("v"));
  expectSame(chunks.working, elements.working, label("working"));
}

TEST_P(TrainKernelsTest, AdamWShowsANonFiniteNorm) {
  for (float normSquared : {std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()}) {
    AdamWResult result = runAdamW(*kernels, dtype(), adamHyper(1.0f),
                                  &normSquared, true, *stream);
    for (std::int64_t i = 0; i < kParameters; ++i)
      ASSERT_TRUE(std::isnan(result.params[i]) && std::isnan(result.m[i]) &&
                  std::isnan(result.v[i]))
          << "norm^2 " << normSquared << ", element " << i;
  }
}

// --- Determinism and errors
// ---------------------------------------------------

Bytes floatBytes(const std::vector<float> &values) {
  Bytes bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

TEST_F(TrainKernelsGpuTest, SumsRepeatBitForBit) {
  std::vector<float> values = normals(5'000'003, DType::F32, 34);
  for (bool squares : {false, true})
    expectDeterministic(
        [&] {
          return floatBytes({runReduction(*kernels, squares, values, *stream)});
        },
        squares ? "sum of squares" : "sum");
}

TEST_P(TrainKernelsTest, ReductionsRepeatBitForBit) {
  const TrainKernels &k = *kernels;
  const Stream &s = *stream;
  const DType t = dtype();
  for (const BiasShape &shape : kBiasShapes) {
    std::vector<float> start = normals(shape.cols, DType::F32, 35);
    expectDeterministic(
        [&] {
          return floatBytes(runBiasGradient(k, t, shape, true, start, s));
        },
        label("bias gradient"));
  }
  const EmbeddingShape e = kEmbeddingShapes[1];
  std::vector<float> dwte = normals(e.vocab * e.channels, DType::F32, 36);
  std::vector<float> dwpe = normals(e.seq * e.channels, DType::F32, 37);
  expectDeterministic(
      [&] {
        EmbeddingBackwardRun run =
            runEmbeddingBackward(k, t, e, true, dwte, dwpe, s);
        return floatBytes(run.dwte);
      },
      label("embedding backward"));
  std::vector<std::int32_t> targets = randomTokens(kLossRows, 256, 38);
  expectDeterministic(
      [&] {
        CrossEntropyRun run = runCrossEntropy(k, t, 256, targets, true, s);
        Bytes bytes = floatBytes(run.losses);
        Bytes gradient = floatBytes(run.dlogits);
        bytes.insert(bytes.end(), gradient.begin(), gradient.end());
        return bytes;
      },
      label("cross-entropy"));
  const float normSquared = 25.0f;
  expectDeterministic(
      [&] {
        return floatBytes(
            runAdamW(k, t, adamHyper(1.0f), &normSquared, true, s).params);
      },
      label("AdamW"));
}

TEST_F(TrainKernelsGpuTest, RejectsF16) {
  DeviceBuffer buffer("buffer", 64);
  const std::string message = errorMessage([&] {
    kernels->add(DType::F16, buffer.get(), buffer.get(), buffer.get(), 8,
                 *stream);
  });
  EXPECT_NE(message.find("training kernels support bf16 and f32"),
            std::string::npos)
      << message;
  const std::string adamMessage = errorMessage([&] {
    fa::train::adamW(*kernels, DType::F16, AdamWStep{}, buffer.get(),
                     buffer.get(), buffer.get(), buffer.get(), buffer.get(),
                     buffer.get(), buffer.get(), 8, *stream);
  });
  EXPECT_NE(adamMessage.find("training kernels support bf16 and f32"),
            std::string::npos)
      << adamMessage;
}

INSTANTIATE_TEST_SUITE_P(DTypes, TrainKernelsTest,
                         ::testing::Values(DType::BF16, DType::F32),
                         [](const ::testing::TestParamInfo<DType> &info) {
                           return std::string(dtypeName(info.param));
                         });

} // namespace
