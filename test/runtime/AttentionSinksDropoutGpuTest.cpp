//===- AttentionSinksDropoutGpuTest.cpp - Sinks and dropout on a GPU ------===//
//
// The GPU fp64 references of sinks and dropout (AttentionReference.cu, the
// dropout mask from Philox.h's constexpr functions on the device) against
// the CPU ones, dsinks included. Then the dropout kernels' keep mask against
// Philox.h bit for bit, forward and dK/dV: the fixture library's (its
// dropout fixture takes p, seed and offset as the compiler's kernels do, so
// this checks how the runtime binds them) and, where the compiler is built,
// the generated library's; and two backward runs of every sinks and dropout
// kernel of the generated library bitwise identical. Skipped without a GPU.
//
// The mask test runs the forward on q = 0 (every kept score equal: P_ij =
// 1 / n_i for the n_i keys row i keeps) and v = I (v[b, h, j, d] = [d == j],
// seq_kv <= head_dim), so out[b, h, i, j] = P_ij Z_ij is exactly zero where
// the kernel dropped (b, h, i, j) and 2 / n_i where it kept it (p = 0.5);
// and the backward on dout = I over the queries (seq_q <= head_dim), so
// dv[b, h, j, i] = P_ij Z_ij shows the dK/dV kernel's mask the same way.
// The dq kernel's mask shows only through fa-run --check's gradients.
//
//===----------------------------------------------------------------------===//

#include "GpuTesting.h"

#include "fa/runtime/Attention.h"
#include "fa/runtime/AttentionVariant.h"
#include "fa/runtime/Kernel.h"
#include "fa/runtime/KernelLibrary.h"
#include "fa/runtime/Philox.h"
#include "fa/runtime/Reference.h"

#include <algorithm>
#include <cmath>
#include <optional>

using namespace fa;
using namespace fa::gputest;

namespace {

void expectSame(const std::vector<double> &gpu, const std::vector<double> &cpu,
                const char *what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  for (std::size_t i = 0; i < cpu.size(); ++i)
    ASSERT_NEAR(gpu[i], cpu[i], 1e-11 * (1 + std::fabs(cpu[i])))
        << what << "[" << i << "]";
}

TEST_F(GpuTest, SinksAndDropoutGpuReferencesMatchTheCpu) {
  struct Case {
    const char *name;
    AttentionShape shape;
    AttentionVariant variant;
  };
  std::vector<Case> cases(4);
  cases[0] = {"sinks, GQA", {2, 4, 2, 37, 50, 64}, {}};
  cases[0].variant.sinks = randomSinks(4, 50, 1);
  // Rows 0..29 keep no key: lse = the sink.
  cases[1] = {"sinks, bottom-right, more queries", {1, 2, 1, 37, 7, 64}, {}};
  cases[1].variant.causal = CausalAlignment::BottomRight;
  cases[1].variant.sinks = {0.5f, -2.0f};
  cases[2] = {"dropout, causal, GQA", {2, 4, 2, 45, 60, 128}, {}};
  cases[2].variant.causal = CausalAlignment::TopLeft;
  cases[2].variant.dropout = AttentionDropout{0.3f, 0xfedcba9876543210ULL, 9};
  cases[3] = {"window, sinks, dropout", {1, 2, 2, 40, 40, 64}, {}};
  cases[3].variant.window = AttentionWindow{9, 3};
  cases[3].variant.sinks = {1.0f, 3.0f};
  cases[3].variant.dropout = AttentionDropout{0.5f, 7, 0};
  for (const Case &c : cases)
    for (DType dtype : {DType::BF16, DType::F32}) {
      SCOPED_TRACE(std::string(c.name) + " " + dtypeName(dtype));
      const AttentionShape &shape = c.shape;
      HostTensor q = randomTensor(shape.query(), dtype, 1);
      HostTensor k = randomTensor(shape.keyValue(), dtype, 2);
      HostTensor v = randomTensor(shape.keyValue(), dtype, 3);
      HostTensor dout = randomTensor(shape.query(), dtype, 4);
      DeviceBuffer qDevice = upload("q", q, dtype),
                   kDevice = upload("k", k, dtype),
                   vDevice = upload("v", v, dtype),
                   doutDevice = upload("dout", dout, dtype);
      AttentionReference cpu = referenceAttentionCpu(shape, q.values, k.values,
                                                     v.values, 0.3, c.variant);
      AttentionReference gpu =
          referenceAttentionGpu(shape, dtype, qDevice.get(), kDevice.get(),
                                vDevice.get(), 0.3, c.variant, *stream);
      expectSame(gpu.out, cpu.out, "out");
      expectSame(gpu.lse, cpu.lse, "lse");
      AttentionGradReference cpuGrad = referenceAttentionGradCpu(
          shape, q.values, k.values, v.values, dout.values, 0.3, c.variant);
      AttentionGradReference gpuGrad = referenceAttentionGradGpu(
          shape, dtype, qDevice.get(), kDevice.get(), vDevice.get(),
          doutDevice.get(), 0.3, c.variant, *stream);
      expectSame(gpuGrad.dq, cpuGrad.dq, "dq");
      expectSame(gpuGrad.dk, cpuGrad.dk, "dk");
      expectSame(gpuGrad.dv, cpuGrad.dv, "dv");
      expectSame(gpuGrad.dsinks, cpuGrad.dsinks, "dsinks");
      EXPECT_EQ(gpuGrad.dsinks.size(), c.variant.sinks.size());
    }
}

/// Whether the '+'-joined `variant` has `part`.
bool has(const std::string &variant, const char *part) {
  return ("+" + variant + "+").find(std::string("+") + part + "+") !=
         std::string::npos;
}

/// A forward kernel group and its backward, loaded.
struct LoadedGroup {
  std::optional<Kernel> forward, delta, dkdv, dq, dsinks;
  std::vector<const KernelSpec *> specs; // Forward first.

  LoadedGroup(const KernelLibrary &library, const KernelQuery &forwardQuery,
              const DeviceInfo &device) {
    const KernelSpec &forwardSpec = library.find(forwardQuery);
    KernelQuery backwardQuery = forwardQuery;
    backwardQuery.op = kAttentionBackwardOp;
    AttentionBackwardKernels backward =
        attentionBackwardKernels(library, library.find(backwardQuery));
    forward.emplace(forwardSpec, device);
    delta.emplace(*backward.delta, device);
    dkdv.emplace(*backward.dkdv, device);
    dq.emplace(*backward.dq, device);
    specs = {&forwardSpec, backward.delta, backward.dkdv, backward.dq};
    if (backward.dsinks) {
      dsinks.emplace(*backward.dsinks, device);
      specs.push_back(backward.dsinks);
    }
  }
};

/// One problem's device tensors, the forward run on them, and a backward
/// launch ready to run.
struct GeneratedRun {
  DeviceBuffer q, k, v, out, lse, dout, dq, dk, dv;
  std::optional<DeviceBuffer> dsinks;
  VariantArgs variantArgs;
  std::optional<AttentionBackwardLaunch> backward;

  GeneratedRun(const LoadedGroup &group, const AttentionShape &shape,
               DType dtype, const AttentionVariant &variant,
               const HostTensor &qHost, const HostTensor &kHost,
               const HostTensor &vHost, const HostTensor &doutHost,
               const Stream &stream)
      : q(upload("q", qHost, dtype)), k(upload("k", kHost, dtype)),
        v(upload("v", vHost, dtype)),
        out("out", tensorBytes(shape.query(), dtype)),
        lse("lse", tensorBytes(shape.logSumExp(), DType::F32)),
        dout(upload("dout", doutHost, dtype)),
        dq("dq", tensorBytes(shape.query(), dtype)),
        dk("dk", tensorBytes(shape.keyValue(), dtype)),
        dv("dv", tensorBytes(shape.keyValue(), dtype)),
        variantArgs(variantParams(variant, shape, group.specs)) {
    if (group.dsinks)
      dsinks.emplace("dsinks", tensorBytes({shape.heads}, DType::F32));
    out.fill(kNaNBytes, stream.get());
    lse.fill(kNaNBytes, stream.get());
    AttentionLaunch(*group.forward, shape,
                    {q.get(), k.get(), v.get(), out.get(), lse.get()},
                    variantArgs.bindings())
        .enqueue(stream);
    backward.emplace(*group.delta, *group.dkdv, *group.dq, shape,
                     AttentionBackwardBuffers{
                         q.get(), k.get(), v.get(), out.get(), lse.get(),
                         dout.get(), dq.get(), dk.get(), dv.get(),
                         dsinks ? dsinks->get() : CUdeviceptr{0}},
                     variantArgs.bindings(),
                     group.dsinks ? &*group.dsinks : nullptr);
  }

  /// The backward on NaN-poisoned gradients; their bytes, dsinks last.
  std::vector<Bytes> runBackward(const Stream &stream) {
    std::vector<DeviceBuffer *> gradients = {&dq, &dk, &dv};
    if (dsinks)
      gradients.push_back(&*dsinks);
    for (DeviceBuffer *gradient : gradients)
      gradient->fill(kNaNBytes, stream.get());
    backward->fillDelta(kNaNBytes, stream);
    backward->enqueue(stream);
    stream.synchronize();
    std::vector<Bytes> bytes;
    for (DeviceBuffer *gradient : gradients)
      bytes.push_back(gradient->download());
    return bytes;
  }
};

/// `library`'s forward groups whose variant has `part` and that have a
/// backward.
std::vector<KernelQuery> groupsWith(const KernelLibrary &library,
                                    const char *part) {
  std::vector<KernelQuery> found;
  for (const KernelQuery &group : library.groups()) {
    KernelQuery backward = group;
    backward.op = kAttentionBackwardOp;
    if (group.op == kAttentionForwardOp && has(group.variant, part) &&
        !library.candidates(backward).empty())
      found.push_back(group);
  }
  return found;
}

/// The test of `library`'s "dropout" kernels' keep mask (the file comment
/// says how); skips when it has none. A seed with both words set and an
/// offset past i32's positive range, so that every bit of their binding
/// shows.
void expectPhiloxMask(const KernelLibrary &library, const DeviceInfo &device,
                      const Stream &stream) {
  std::vector<KernelQuery> groups;
  for (const KernelQuery &group : groupsWith(library, "dropout"))
    if (group.variant == "dropout")
      groups.push_back(group);
  if (groups.empty())
    GTEST_SKIP() << library.path() << " has no dropout kernels";
  const AttentionDropout dropout{0.5f, 0x9e3779b97f4a7c15ULL, 3000000000u};
  for (const KernelQuery &group : groups) {
    SCOPED_TRACE(group.describe());
    const DType dtype = group.dtype;
    const std::int64_t D = group.headDim;
    // Off the tile sizes, both at most D (v and dout are identities).
    const AttentionShape shape{2, 3, 3, D - 5, D - 3, D};
    AttentionVariant variant;
    variant.dropout = dropout;
    HostTensor q{shape.query(),
                 std::vector<float>(elementCount(shape.query()), 0.0f)};
    HostTensor k = randomTensor(shape.keyValue(), dtype, 1);
    HostTensor v{shape.keyValue(), {}}, dout{shape.query(), {}};
    for (std::int64_t row = 0; row < elementCount(shape.keyValue()) / D; ++row)
      for (std::int64_t d = 0; d < D; ++d)
        v.values.push_back(d == row % shape.seqKv ? 1.0f : 0.0f);
    for (std::int64_t row = 0; row < elementCount(shape.query()) / D; ++row)
      for (std::int64_t d = 0; d < D; ++d)
        dout.values.push_back(d == row % shape.seqQ ? 1.0f : 0.0f);

    LoadedGroup loaded(library, group, device);
    GeneratedRun run(loaded, shape, dtype, variant, q, k, v, dout, stream);
    run.runBackward(stream);
    HostTensor out = download(run.out, shape.query(), dtype);
    HostTensor dv = download(run.dv, shape.keyValue(), dtype);

    std::int64_t checked = 0, kept = 0, wrong = 0;
    for (std::int64_t b = 0; b < shape.batch; ++b)
      for (std::int64_t h = 0; h < shape.heads; ++h)
        for (std::int64_t i = 0; i < shape.seqQ; ++i) {
          const std::int64_t seen =
              group.causal ? std::min(i + 1, shape.seqKv) : shape.seqKv;
          const std::int64_t row = (b * shape.heads + h) * shape.seqQ + i;
          for (std::int64_t j = 0; j < D; ++j) {
            const float outValue = out.values[row * D + j];
            bool expectKept = false;
            if (j < seen) {
              DropoutPosition position{
                  static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(h),
                  static_cast<std::uint32_t>(shape.heads),
                  static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j)};
              expectKept = dropoutKeep(dropout.seed, dropout.offset, position,
                                       dropout.p);
              // dv[b, h, j, i] = P_ij Z_ij (heads == kv heads).
              const float dvValue =
                  dv.values[((b * shape.kvHeads + h) * shape.seqKv + j) * D +
                            i];
              if ((dvValue != 0) != expectKept && wrong++ < 10)
                ADD_FAILURE() << "dv mask at (b, h, i, j) = (" << b << ", " << h
                              << ", " << i << ", " << j << "): kernel "
                              << dvValue << ", Philox keeps " << expectKept;
              ++checked;
              kept += expectKept;
            }
            if ((outValue != 0) != expectKept && wrong++ < 10)
              ADD_FAILURE() << "out mask at (b, h, i, j) = (" << b << ", " << h
                            << ", " << i << ", " << j << "): kernel "
                            << outValue << ", Philox keeps " << expectKept;
            if (expectKept)
              EXPECT_NEAR(outValue, 2.0 / static_cast<double>(seen),
                          2e-2 / static_cast<double>(seen));
          }
        }
    EXPECT_EQ(wrong, 0);
    // About half of the seen pairs are kept.
    EXPECT_GT(kept, checked / 2 - checked / 10);
    EXPECT_LT(kept, checked / 2 + checked / 10);
  }
}

TEST_F(GpuTest, FixtureDropoutKeepMaskIsPhiloxBitForBit) {
  expectPhiloxMask(KernelLibrary::load(FA_FIXTURE_KERNELS_DIR),
                   context->device(), *stream);
}

#ifdef FA_GENERATED_KERNELS_DIR
class GeneratedSinksDropoutTest : public GpuTest {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped())
      return;
    library.emplace(KernelLibrary::load(FA_GENERATED_KERNELS_DIR));
  }

  std::optional<KernelLibrary> library;
};

TEST_F(GeneratedSinksDropoutTest, DropoutKeepMaskIsPhiloxBitForBit) {
  expectPhiloxMask(*library, context->device(), *stream);
}

TEST_F(GeneratedSinksDropoutTest, BackwardRunsAreBitwiseIdentical) {
  // Head dims 64 and 128 (each group loads four or five kernels).
  std::vector<KernelQuery> groups;
  for (const char *part : {"sinks", "dropout"})
    for (const KernelQuery &group : groupsWith(*library, part))
      if ((group.headDim == 64 || group.headDim == 128) &&
          std::find(groups.begin(), groups.end(), group) == groups.end())
        groups.push_back(group);
  if (groups.empty())
    GTEST_SKIP() << FA_GENERATED_KERNELS_DIR
                 << " has no sinks or dropout kernels with a backward";
  for (const KernelQuery &group : groups) {
    SCOPED_TRACE(group.describe());
    const bool documents = has(group.variant, "document");
    const AttentionShape shape{
        2, 4, 2, documents ? 1000 : 300, 1000, group.headDim};
    AttentionVariant variant;
    if (has(group.variant, "causal_bottom_right"))
      variant.causal = CausalAlignment::BottomRight;
    if (has(group.variant, "window"))
      variant.window = AttentionWindow{100, 20};
    if (documents)
      variant.docIds = documentIdsFromLengths({100, 37, 300}, 2, 1000);
    if (has(group.variant, "softcap"))
      variant.softcap = 20.0f;
    if (has(group.variant, "alibi"))
      variant.alibiSlopes = alibiSlopes(shape.heads);
    if (has(group.variant, "sinks"))
      variant.sinks = randomSinks(shape.heads, shape.seqKv, 5);
    if (has(group.variant, "dropout"))
      variant.dropout = AttentionDropout{0.1f, 77, 3};
    LoadedGroup loaded(*library, group, context->device());
    GeneratedRun run(loaded, shape, group.dtype, variant,
                     randomTensor(shape.query(), group.dtype, 1),
                     randomTensor(shape.keyValue(), group.dtype, 2),
                     randomTensor(shape.keyValue(), group.dtype, 3),
                     randomTensor(shape.query(), group.dtype, 4), *stream);
    std::vector<Bytes> first = run.runBackward(*stream);
    std::vector<Bytes> second = run.runBackward(*stream);
    EXPECT_EQ(first.size(), variant.sinks.empty() ? 3u : 4u);
    for (std::size_t t = 0; t < first.size(); ++t)
      EXPECT_TRUE(first[t] == second[t]) << "gradient "
                                         << (t == 3   ? "dsinks"
                                             : t == 0 ? "dq"
                                             : t == 1 ? "dk"
                                                      : "dv")
                                         << " differs between two runs";
  }
}
#endif // FA_GENERATED_KERNELS_DIR

} // namespace
