//===- LossHeadGpuTest.cpp - The chunked LM head loss against fp64 --------===//
//
// LossHead at M = 2000 rows, C = 128 channels, vocabularies 301 (rows of
// logits not 16-byte multiples) and 4096, bf16 and f32, in one chunk, in two
// (1000 rows) and in 286 (7 rows, the last of 5), against a double-precision
// reference of the definitions (LossHead.h): the losses, dlnf and dhead of
// the mean loss, dhead overwritten as a tied head's is. The inputs are bf16
// values (exact in f32 too), so one reference serves both dtypes. Outputs
// start poisoned (every byte 0xFF, NaN): an element left unwritten, or a
// dhead added to instead of overwritten, fails.
//
// Also: a row's loss has the same bits in every chunking (LossHead.h says
// when; this checks it on the GPU at hand), a chunking repeats its bits
// run after run, a forward without backward leaves the gradients alone, and
// the arguments are checked. Skipped without a GPU.
//
// Bounds: a logit is an f32 sum of C products, in error by at most
// accumulationError (MatmulGpuTest.cpp's, measured on an H100) of the sum
// of their magnitudes, plus its f32 rounding; a loss by at most twice its
// row's worst logit error (logsumexp moves by at most the largest logit
// error, and the target's logit is one more) plus f32's exp/log error. A
// softmax probability p_j moves by at most 2 p_j delta for logit errors up
// to delta, so each dlogit is within 2 delta (or, at the target, 2 delta
// p_t / (1 - p_t)) of itself, relatively, before its rounding to the dtype.
// dlnf and dhead sum those with f32 accumulation (one more rounding per
// chunk for dhead): their bound is that relative error times the sum of the
// terms' magnitudes, plus the output's rounding.
//
//===----------------------------------------------------------------------===//

#include "fa/train/LossHead.h"

#include "fa/train/Matmul.h"
#include "fa/train/TrainKernels.h"

#include "GpuChecks.h"
#include "GpuTesting.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace fa;
using namespace fa::gputest;
using namespace fa::traintest;
using fa::train::LossHead;
using fa::train::Matmul;
using fa::train::TrainKernels;

namespace {

constexpr std::int64_t kRows = 2000, kChannels = 128;
const std::int64_t kVocabs[] = {301, 4096};
/// One chunk (today's unchunked work), two, and 286 of 7 rows (the last 5).
const std::int64_t kChunkRows[] = {kRows, 1000, 7};
/// The head's weights are N(0, 1/64), so logits are N(0, 2): softmaxes far
/// from one-hot, where every dlogit matters.
constexpr float kHeadScale = 0.125f;

/// f32 accumulation relative to the sum of the terms' magnitudes, as
/// MatmulGpuTest.cpp bounds it: tensor cores for bf16, FMAs for f32.
double accumulationError(DType dtype) {
  return dtype == DType::BF16 ? 5e-4 : 1e-5;
}

/// Round to nearest in `dtype`: half a unit in the last place, relative.
double roundingError(DType dtype) {
  return dtype == DType::BF16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -24);
}

/// f32 expf/logf inside the cross-entropy kernel (TrainKernelsGpuTest's
/// bound for its losses and dlogits).
constexpr double kSoftmaxError = 2e-5;

// --- Inputs and the fp64 reference ------------------------------------------

struct Inputs {
  std::vector<float> lnf;  // [M, C], bf16 values.
  std::vector<float> head; // [V, C], bf16 values times kHeadScale.
  std::vector<std::int32_t> targets;
};

Inputs inputsFor(std::int64_t vocab) {
  Inputs in;
  in.lnf = randomTensor({kRows, kChannels}, DType::BF16, 41).values;
  in.head = randomTensor({vocab, kChannels}, DType::BF16, 42).values;
  for (float &value : in.head)
    value *= kHeadScale;
  std::mt19937 rng(43);
  std::uniform_int_distribution<std::int32_t> token(
      0, static_cast<std::int32_t>(vocab - 1));
  in.targets.resize(kRows);
  for (std::int32_t &target : in.targets)
    target = token(rng);
  return in;
}

/// The definitions in fp64, and the magnitudes the bounds scale with.
struct Reference {
  std::vector<double> losses;
  /// Per row: max over j of sum_k |lnf_ik head_jk| (a logit's terms).
  std::vector<double> logitMagnitude;
  /// The largest p_t / (1 - p_t) of any row: how much a target's dlogit
  /// can move relative to itself, beyond the other dlogits' 1.
  double targetGain = 1;
  std::vector<double> dlnf, dlnfMagnitude;   // [M, C]
  std::vector<double> dhead, dheadMagnitude; // [V, C]
};

Reference computeReference(const Inputs &in, std::int64_t vocab) {
  const std::int64_t c = kChannels;
  Reference ref;
  ref.losses.resize(kRows);
  ref.logitMagnitude.resize(kRows);
  ref.dlnf.assign(kRows * c, 0.0);
  ref.dlnfMagnitude.assign(kRows * c, 0.0);
  ref.dhead.assign(vocab * c, 0.0);
  ref.dheadMagnitude.assign(vocab * c, 0.0);
  std::vector<double> logits(vocab), dlogits(vocab);
  for (std::int64_t i = 0; i < kRows; ++i) {
    const float *x = &in.lnf[i * c];
    double maxLogit = -INFINITY, maxMagnitude = 0;
    for (std::int64_t j = 0; j < vocab; ++j) {
      const float *w = &in.head[j * c];
      double sum = 0, magnitude = 0;
      for (std::int64_t k = 0; k < c; ++k) {
        sum += double{x[k]} * w[k];
        magnitude += std::fabs(double{x[k]} * w[k]);
      }
      logits[j] = sum;
      maxLogit = std::max(maxLogit, sum);
      maxMagnitude = std::max(maxMagnitude, magnitude);
    }
    double sum = 0;
    for (std::int64_t j = 0; j < vocab; ++j)
      sum += std::exp(logits[j] - maxLogit);
    const double lse = maxLogit + std::log(sum);
    const std::int32_t t = in.targets[i];
    ref.losses[i] = lse - logits[t];
    ref.logitMagnitude[i] = maxMagnitude;
    for (std::int64_t j = 0; j < vocab; ++j)
      dlogits[j] = (std::exp(logits[j] - lse) - (j == t ? 1.0 : 0.0)) / kRows;
    const double pt = std::exp(logits[t] - lse);
    ref.targetGain = std::max(ref.targetGain, pt / (1 - pt));

    double *dx = &ref.dlnf[i * c], *dxMagnitude = &ref.dlnfMagnitude[i * c];
    for (std::int64_t j = 0; j < vocab; ++j) {
      const float *w = &in.head[j * c];
      double *dw = &ref.dhead[j * c], *dwMagnitude = &ref.dheadMagnitude[j * c];
      const double d = dlogits[j], dMagnitude = std::fabs(dlogits[j]);
      for (std::int64_t k = 0; k < c; ++k) {
        dx[k] += d * w[k];
        dxMagnitude[k] += dMagnitude * std::fabs(w[k]);
        dw[k] += d * x[k];
        dwMagnitude[k] += dMagnitude * std::fabs(x[k]);
      }
    }
  }
  return ref;
}

/// Each vocabulary's inputs and reference, computed once (the fp64 products
/// are the test's slow part) and shared by both dtypes.
struct Case {
  Inputs inputs;
  Reference reference;
};

const Case &caseFor(std::int64_t vocab) {
  static std::map<std::int64_t, std::unique_ptr<Case>> cases;
  std::unique_ptr<Case> &entry = cases[vocab];
  if (!entry) {
    Inputs inputs = inputsFor(vocab);
    Reference reference = computeReference(inputs, vocab);
    entry =
        std::make_unique<Case>(Case{std::move(inputs), std::move(reference)});
  }
  return *entry;
}

// --- Device helpers and checks ----------------------------------------------

DeviceBuffer deviceTargets(const std::vector<std::int32_t> &targets) {
  DeviceBuffer buffer("targets", targets.size() * sizeof(std::int32_t));
  Bytes bytes(buffer.bytes());
  std::memcpy(bytes.data(), targets.data(), bytes.size());
  buffer.upload(bytes);
  return buffer;
}

bool allPoison(const Bytes &bytes) {
  return std::all_of(bytes.begin(), bytes.end(),
                     [](std::uint8_t byte) { return byte == kNaNBytes; });
}

/// Expects the same bytes of two f32 vectors, naming the first rows that
/// differ and the largest difference.
void expectSameBits(const Bytes &actual, const Bytes &expected,
                    const std::string &what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  if (actual == expected)
    return;
  const std::vector<float> a = decode(actual, DType::F32);
  const std::vector<float> e = decode(expected, DType::F32);
  std::int64_t differing = 0;
  double largest = 0;
  std::ostringstream examples;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &e[i], sizeof(float)) == 0)
      continue;
    largest = std::max(largest, std::fabs(double{a[i]} - e[i]));
    if (differing++ < 5)
      examples << " [" << i << "] " << a[i] << " vs " << e[i];
  }
  ADD_FAILURE() << what << ": " << differing << " of " << a.size()
                << " differ, by up to " << largest << ":" << examples.str();
}

/// Expects two f32 vectors within `ulps` f32 units of the expected values'
/// magnitude: what products of another row count may give (cuBLASLt's
/// algorithm for a 7-row chunk sums the logits in another order than the
/// whole batch's; measured on an H100: up to 1.9e-6, about 2 ulps at 6).
void expectWithinUlps(const Bytes &actual, const Bytes &expected, double ulps,
                      const std::string &what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  const std::vector<float> a = decode(actual, DType::F32);
  const std::vector<float> e = decode(expected, DType::F32);
  const double ulp = std::numeric_limits<float>::epsilon();
  std::int64_t failures = 0;
  std::ostringstream examples;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double bound = ulps * ulp * std::fabs(double{e[i]});
    if (std::fabs(double{a[i]} - e[i]) <= bound)
      continue;
    if (failures++ < 5)
      examples << " [" << i << "] " << a[i] << " vs " << e[i] << " (bound "
               << bound << ")";
  }
  EXPECT_EQ(failures, 0) << what << " (of " << a.size()
                         << "):" << examples.str();
}

// --- Fixture -----------------------------------------------------------------

/// What one forward wrote, as bytes and as values.
struct HeadRun {
  Bytes losses, dlnf, dhead;
};

/// Matmul and the training kernels in device 0's context, per dtype.
class LossHeadGpuTest : public GpuTest,
                        public ::testing::WithParamInterface<DType> {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped())
      return;
    matmul = std::make_unique<Matmul>();
    kernels = std::make_unique<TrainKernels>();
  }

  DType dtype() const { return GetParam(); }
  std::string label(const std::string &what, std::int64_t vocab,
                    std::int64_t chunkRows) const {
    return what + " (" + dtypeName(dtype()) + ", vocab " +
           std::to_string(vocab) + ", chunks of " + std::to_string(chunkRows) +
           " rows)";
  }

  /// LossHead::forward on the case's inputs into poisoned outputs.
  HeadRun run(std::int64_t vocab, std::int64_t chunkRows, bool forBackward) {
    const Inputs &in = caseFor(vocab).inputs;
    DeviceBuffer lnf = upload("lnf", {{kRows, kChannels}, in.lnf}, dtype());
    DeviceBuffer head = upload("head", {{vocab, kChannels}, in.head}, dtype());
    DeviceBuffer targets = deviceTargets(in.targets);
    DeviceBuffer losses = poisoned("losses", kRows, DType::F32, *stream);
    DeviceBuffer dlnf = poisoned("dlnf", kRows * kChannels, dtype(), *stream);
    DeviceBuffer dhead =
        poisoned("dhead", vocab * kChannels, DType::F32, *stream);
    LossHead lossHead(kRows, vocab, kChannels, dtype(), chunkRows, *matmul,
                      *kernels);
    EXPECT_EQ(lossHead.chunks(), (kRows + chunkRows - 1) / chunkRows);
    // Without backward the gradients are passed anyway: they must stay
    // poisoned.
    lossHead.forward(lnf.get(), head.get(), targets.get(), losses.get(),
                     forBackward, dlnf.get(), dhead.get(), *stream);
    stream->synchronize();
    return {losses.download(), dlnf.download(), dhead.download()};
  }

  void expectMatchesReference(const HeadRun &got, std::int64_t vocab,
                              std::int64_t chunkRows);

  std::unique_ptr<Matmul> matmul;
  std::unique_ptr<TrainKernels> kernels;
};

void LossHeadGpuTest::expectMatchesReference(const HeadRun &got,
                                             std::int64_t vocab,
                                             std::int64_t chunkRows) {
  const Reference &ref = caseFor(vocab).reference;
  const double logitError = accumulationError(dtype()) + std::ldexp(1.0, -24);
  std::vector<double> lossBound(kRows);
  double worstLogitError = 0;
  for (std::int64_t i = 0; i < kRows; ++i) {
    const double delta = logitError * ref.logitMagnitude[i];
    worstLogitError = std::max(worstLogitError, delta);
    lossBound[i] =
        2 * delta + kSoftmaxError * std::fabs(ref.losses[i]) + kSoftmaxError;
  }
  expectWithin(decode(got.losses, DType::F32), ref.losses, lossBound,
               label("losses", vocab, chunkRows));

  // Relative to the magnitudes of their terms: a dlogit's error from the
  // logits', the softmax's, its rounding to the dtype, then the products'
  // accumulation (dhead: one more f32 rounding per chunk).
  const double dlogitError = 2 * worstLogitError * ref.targetGain +
                             kSoftmaxError + roundingError(dtype());
  const double chunks =
      static_cast<double>((kRows + chunkRows - 1) / chunkRows);
  auto bounds = [](const std::vector<double> &value,
                   const std::vector<double> &magnitude, double relative,
                   double rounding) {
    std::vector<double> bound(value.size());
    for (std::size_t i = 0; i < value.size(); ++i)
      bound[i] = relative * magnitude[i] + rounding * std::fabs(value[i]);
    return bound;
  };
  expectWithin(decode(got.dlnf, dtype()), ref.dlnf,
               bounds(ref.dlnf, ref.dlnfMagnitude,
                      dlogitError + accumulationError(dtype()),
                      roundingError(dtype())),
               label("dlnf", vocab, chunkRows));
  expectWithin(decode(got.dhead, DType::F32), ref.dhead,
               bounds(ref.dhead, ref.dheadMagnitude,
                      dlogitError + accumulationError(dtype()) +
                          chunks * std::ldexp(1.0, -24),
                      std::ldexp(1.0, -24)),
               label("dhead", vocab, chunkRows));
}

// --- Tests -------------------------------------------------------------------

TEST_P(LossHeadGpuTest, MatchesTheFp64ReferenceInEveryChunking) {
  for (std::int64_t vocab : kVocabs) {
    HeadRun whole;
    for (std::int64_t chunkRows : kChunkRows) {
      HeadRun got = run(vocab, chunkRows, true);
      expectMatchesReference(got, vocab, chunkRows);
      if (chunkRows == kRows)
        whole = got;
      else
        expectWithinUlps(got.losses, whole.losses, 8,
                         label("losses against one chunk's", vocab, chunkRows));
    }
  }
}

TEST_P(LossHeadGpuTest, AChunkingRepeatsItsBits) {
  for (std::int64_t chunkRows : {std::int64_t{1000}, std::int64_t{7}}) {
    HeadRun first = run(301, chunkRows, true);
    HeadRun second = run(301, chunkRows, true);
    EXPECT_TRUE(first.losses == second.losses)
        << label("losses of two runs differ", 301, chunkRows);
    EXPECT_TRUE(first.dlnf == second.dlnf)
        << label("dlnf of two runs differ", 301, chunkRows);
    EXPECT_TRUE(first.dhead == second.dhead)
        << label("dhead of two runs differ", 301, chunkRows);
  }
}

TEST_P(LossHeadGpuTest, WithoutBackwardOnlyLossesAreWritten) {
  for (std::int64_t chunkRows : kChunkRows) {
    HeadRun lossOnly = run(301, chunkRows, false);
    HeadRun withBackward = run(301, chunkRows, true);
    // The same kernel computes each loss either way.
    expectSameBits(lossOnly.losses, withBackward.losses,
                   label("losses without backward", 301, chunkRows));
    EXPECT_TRUE(allPoison(lossOnly.dlnf))
        << label("dlnf written without backward", 301, chunkRows);
    EXPECT_TRUE(allPoison(lossOnly.dhead))
        << label("dhead written without backward", 301, chunkRows);
  }
}

TEST_P(LossHeadGpuTest, RefusesBadArgumentsNamingTheShape) {
  const std::string shape = "LM head loss (rows 2000, vocab 301, channels "
                            "128, " +
                            std::string(dtypeName(dtype())) +
                            ", chunks of 7 rows)";
  EXPECT_EQ(errorMessage([&] {
              LossHead(kRows, 301, kChannels, dtype(), 0, *matmul, *kernels);
            }),
            "LM head loss (rows 2000, vocab 301, channels 128, " +
                std::string(dtypeName(dtype())) +
                ", chunks of 0 rows): the chunk must hold 1 to 2000 rows");

  LossHead lossHead(kRows, 301, kChannels, dtype(), 7, *matmul, *kernels);
  EXPECT_EQ(lossHead.describe(), shape);
  DeviceBuffer lnf("lnf", kRows * kChannels * dtypeBytes(dtype()) + 16);
  DeviceBuffer head("head", 301 * kChannels * dtypeBytes(dtype()) + 16);
  DeviceBuffer targets("targets", kRows * 4 + 16);
  DeviceBuffer losses("losses", kRows * 4 + 16);
  DeviceBuffer dlnf("dlnf", kRows * kChannels * dtypeBytes(dtype()) + 16);
  DeviceBuffer dhead("dhead", 301 * kChannels * 4 + 16);
  // Zeros: the call that is let through reads valid targets.
  for (DeviceBuffer *buffer : {&lnf, &head, &targets, &losses, &dlnf, &dhead})
    buffer->fill(0, stream->get());
  struct Pointers {
    CUdeviceptr lnf, head, targets, losses, dlnf, dhead;
  };
  const Pointers good{lnf.get(),    head.get(), targets.get(),
                      losses.get(), dlnf.get(), dhead.get()};
  auto error = [&](Pointers p, bool forBackward) {
    return errorMessage([&] {
      lossHead.forward(p.lnf, p.head, p.targets, p.losses, forBackward, p.dlnf,
                       p.dhead, *stream);
    });
  };
  Pointers p = good;
  p.lnf = 0;
  EXPECT_EQ(error(p, true), shape + ": lnf is null");
  p = good;
  p.head += 8;
  std::ostringstream address;
  address << std::hex << p.head;
  EXPECT_EQ(error(p, true), shape + ": head weight (0x" + address.str() +
                                ") is not 16-byte aligned");
  p = good;
  p.targets = 0;
  EXPECT_EQ(error(p, false), shape + ": targets is null");
  p = good;
  p.losses += 2;
  EXPECT_NE(error(p, false).find(shape + ": losses (0x"), std::string::npos);
  EXPECT_NE(error(p, false).find(") is not 4-byte aligned"), std::string::npos);
  p = good;
  p.dlnf = 0;
  EXPECT_EQ(error(p, true), shape + ": dlnf is null");
  p = good;
  p.dhead += 4;
  EXPECT_NE(error(p, true).find(shape + ": dhead (0x"), std::string::npos);
  // Without backward the gradients are not looked at.
  p = good;
  p.dlnf = 0;
  p.dhead = 0;
  EXPECT_EQ(error(p, false), "no error");
  stream->synchronize();
}

INSTANTIATE_TEST_SUITE_P(DTypes, LossHeadGpuTest,
                         ::testing::Values(DType::BF16, DType::F32),
                         [](const auto &info) {
                           return std::string(dtypeName(info.param));
                         });

} // namespace
