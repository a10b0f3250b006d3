//===- AttentionStridedGpuTest.cpp - Kernels on views of fused buffers ----===//
//
// The generated library's views twins (KernelQuery::views: the default
// tile's kernels compiled with strided q, k, v, out, dout, dq, dk, dv; see
// kernels/CMakeLists.txt) read q, k, v (and the backward's out, dout) and
// write out (and dq, dk, dv) as strided views: q, k and v as heads of one
// fused [batch, seq, (heads + 2 kv_heads) * head_dim] buffer (the GPT's QKV
// product), out in a merged [batch, seq, heads * head_dim] buffer, dq, dk
// and dv in a fused gradient buffer like qkv. Each run must give the same
// bits as the same twin on contiguous copies, which must give the bits of
// the group's contiguous default (the same tile and arithmetic, other
// addresses), and leave every element of the fused buffers outside the
// views (a padding column block on every row) as it was. A plain query must
// never get a twin. Skipped without a GPU.
//
//===----------------------------------------------------------------------===//

#include "GpuTesting.h"

#include "fa/runtime/Attention.h"
#include "fa/runtime/AttentionVariant.h"
#include "fa/runtime/Kernel.h"
#include "fa/runtime/KernelLibrary.h"

#include <cstring>
#include <memory>
#include <optional>
#include <tuple>

using namespace fa;
using namespace fa::gputest;

namespace {

#ifdef FA_GENERATED_KERNELS_DIR

/// Extra elements at the end of every row of a fused buffer, which no view
/// covers: 16 bytes of bf16 (the views' strides stay 16-byte multiples).
constexpr std::int64_t kPadding = 8;
/// What the padding and the outputs hold before a run: 0xA5 bytes (a bf16
/// of -2.9e-16, no value a kernel writes by chance where it should not) in
/// the padding, NaN (0xFF) in the outputs.
constexpr std::uint8_t kPaddingBytes = 0xA5;

/// A fused [batch, seq, width] buffer on the host, the views of which are
/// `[batch, heads, seq, head_dim]` tensors starting at a column.
struct Fused {
  std::int64_t batch, seq, width;
  std::size_t elementBytes;
  Bytes bytes;

  Fused(std::int64_t batch, std::int64_t seq, std::int64_t width,
        std::size_t elementBytes, std::uint8_t fill)
      : batch(batch), seq(seq), width(width), elementBytes(elementBytes),
        bytes(static_cast<std::size_t>(batch * seq * width) * elementBytes,
              fill) {}

  /// The byte offset of element [b, h, t, d] of the view starting at
  /// `column` with `headDim`-wide heads.
  std::size_t at(std::int64_t column, std::int64_t headDim, std::int64_t b,
                 std::int64_t h, std::int64_t t) const {
    return static_cast<std::size_t>((b * seq + t) * width + column +
                                    h * headDim) *
           elementBytes;
  }

  /// The view's strides: {seq * width, head_dim, width, 1}.
  Strides strides(std::int64_t headDim) const {
    return {seq * width, headDim, width, 1};
  }

  /// Copies the contiguous `[batch, heads, seq, head_dim]` tensor `tensor`
  /// into the view at `column`.
  void scatter(const Bytes &tensor, std::int64_t column, std::int64_t heads,
               std::int64_t headDim) {
    std::size_t rowBytes = static_cast<std::size_t>(headDim) * elementBytes;
    std::size_t source = 0;
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t h = 0; h < heads; ++h)
        for (std::int64_t t = 0; t < seq; ++t, source += rowBytes)
          std::memcpy(&bytes[at(column, headDim, b, h, t)], &tensor[source],
                      rowBytes);
  }

  /// The view at `column` as a contiguous tensor.
  Bytes gather(std::int64_t column, std::int64_t heads,
               std::int64_t headDim) const {
    std::size_t rowBytes = static_cast<std::size_t>(headDim) * elementBytes;
    Bytes tensor(static_cast<std::size_t>(batch * heads * seq) * rowBytes);
    std::size_t dest = 0;
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t h = 0; h < heads; ++h)
        for (std::int64_t t = 0; t < seq; ++t, dest += rowBytes)
          std::memcpy(&tensor[dest], &bytes[at(column, headDim, b, h, t)],
                      rowBytes);
    return tensor;
  }

  /// Whether every byte of the columns from `column` on (the padding) is
  /// still `fill`; reports the first that is not.
  ::testing::AssertionResult paddingIs(std::int64_t column, std::uint8_t fill,
                                       const char *what) const {
    for (std::int64_t row = 0; row < batch * seq; ++row)
      for (std::int64_t c = column; c < width; ++c)
        for (std::size_t i = 0; i < elementBytes; ++i)
          if (bytes[static_cast<std::size_t>(row * width + c) * elementBytes +
                    i] != fill)
            return ::testing::AssertionFailure()
                   << what << ": padding column " << c << " of row " << row
                   << " (of batch * seq) was overwritten";
    return ::testing::AssertionSuccess();
  }
};

/// Whether `bytes` (elements of `elementBytes`) holds no all-ones element:
/// the NaN the outputs are filled with before a run, which a kernel that
/// writes every element leaves nowhere.
::testing::AssertionResult
allWritten(const Bytes &bytes, std::size_t elementBytes, const char *what) {
  for (std::size_t e = 0; e < bytes.size(); e += elementBytes) {
    bool poisoned = true;
    for (std::size_t i = 0; i < elementBytes; ++i)
      poisoned = poisoned && bytes[e + i] == kNaNBytes;
    if (poisoned)
      return ::testing::AssertionFailure()
             << what << ": element " << e / elementBytes << " was not written";
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult sameBits(const Bytes &strided,
                                    const Bytes &contiguous,
                                    std::size_t elementBytes,
                                    const char *what) {
  if (strided.size() != contiguous.size())
    return ::testing::AssertionFailure()
           << what << ": " << strided.size() << " bytes against "
           << contiguous.size();
  for (std::size_t i = 0; i < strided.size(); ++i)
    if (strided[i] != contiguous[i])
      return ::testing::AssertionFailure()
             << what << ": element " << i / elementBytes
             << " differs between the strided and the contiguous run";
  return ::testing::AssertionSuccess();
}

DeviceBuffer uploaded(const std::string &name, const Bytes &bytes) {
  DeviceBuffer buffer(name, bytes.size());
  buffer.upload(bytes);
  return buffer;
}

/// A group's forward and, with `backward` where the library has it, its
/// backward kernels, loaded.
struct LoadedKernels {
  std::unique_ptr<Kernel> forward, delta, dkdv, dq;
  std::vector<const KernelSpec *> specs; // The forward first.

  LoadedKernels(const KernelLibrary &library, const KernelQuery &forwardQuery,
                const DeviceInfo &device, bool backward = true) {
    const KernelSpec &forwardSpec = library.find(forwardQuery);
    forward = std::make_unique<Kernel>(forwardSpec, device);
    specs.push_back(&forwardSpec);
    KernelQuery backwardQuery = forwardQuery;
    backwardQuery.op = kAttentionBackwardOp;
    if (!backward || library.candidates(backwardQuery).empty())
      return;
    const KernelSpec &dqSpec = library.find(backwardQuery);
    AttentionBackwardKernels kernels =
        attentionBackwardKernels(library, dqSpec);
    delta = std::make_unique<Kernel>(*kernels.delta, device);
    dkdv = std::make_unique<Kernel>(*kernels.dkdv, device);
    dq = std::make_unique<Kernel>(dqSpec, device);
    specs.insert(specs.end(), {kernels.delta, kernels.dkdv, &dqSpec});
  }

  std::string describe() const {
    return forward->spec().name + (dq ? " and " + dq->spec().name : "");
  }
};

/// What a run writes, downloaded: out, lse and (with a backward) dq, dk, dv.
struct Results {
  Bytes out, lse, dq, dk, dv;
};

::testing::AssertionResult sameResults(const Results &a, const Results &b,
                                       std::size_t elementBytes,
                                       const char *what) {
  for (auto [x, y, name, bytes] :
       {std::tuple{&a.out, &b.out, "out", elementBytes},
        std::tuple{&a.lse, &b.lse, "lse", sizeof(float)},
        std::tuple{&a.dq, &b.dq, "dq", elementBytes},
        std::tuple{&a.dk, &b.dk, "dk", elementBytes},
        std::tuple{&a.dv, &b.dv, "dv", elementBytes}}) {
    ::testing::AssertionResult same = sameBits(*x, *y, bytes, name);
    if (!same)
      return ::testing::AssertionFailure() << what << ": " << same.message();
  }
  return ::testing::AssertionSuccess();
}

class AttentionStridedGpuTest : public GpuTest {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped())
      return;
    library.emplace(KernelLibrary::load(FA_GENERATED_KERNELS_DIR));
  }

  /// Runs `kernels` on contiguous tensors.
  Results runContiguous(const AttentionShape &shape, DType dtype,
                        const LoadedKernels &kernels,
                        const ArgBindings &variant, const Bytes &qHost,
                        const Bytes &kHost, const Bytes &vHost,
                        const Bytes &doutHost);

  /// Runs the forward and backward of `shape` with the twins `views` on
  /// contiguous tensors and on views of fused buffers, and with the group's
  /// contiguous kernels `contiguous` on contiguous tensors, and compares.
  void check(const AttentionShape &shape, DType dtype,
             const LoadedKernels &views, const LoadedKernels &contiguous,
             const AttentionVariant &variant);

  std::optional<KernelLibrary> library;
};

Results AttentionStridedGpuTest::runContiguous(
    const AttentionShape &shape, DType dtype, const LoadedKernels &kernels,
    const ArgBindings &variant, const Bytes &qHost, const Bytes &kHost,
    const Bytes &vHost, const Bytes &doutHost) {
  const std::size_t elementBytes = dtypeBytes(dtype);
  DeviceBuffer q = uploaded("q", qHost), k = uploaded("k", kHost),
               v = uploaded("v", vHost), dout = uploaded("dout", doutHost);
  DeviceBuffer out("out", qHost.size()), dqOut("dq", qHost.size()),
      dkOut("dk", kHost.size()), dvOut("dv", vHost.size());
  DeviceBuffer lse("lse", tensorBytes(shape.logSumExp(), DType::F32));
  for (DeviceBuffer *buffer : {&out, &dqOut, &dkOut, &dvOut, &lse})
    buffer->fill(kNaNBytes, stream->get());
  AttentionLaunch(*kernels.forward, shape,
                  {q.get(), k.get(), v.get(), out.get(), lse.get()}, variant)
      .enqueue(*stream);
  if (kernels.dq) {
    AttentionBackwardLaunch backward(
        *kernels.delta, *kernels.dkdv, *kernels.dq, shape,
        AttentionBackwardBuffers{q.get(), k.get(), v.get(), out.get(),
                                 lse.get(), dout.get(), dqOut.get(),
                                 dkOut.get(), dvOut.get()},
        variant);
    backward.fillDelta(kNaNBytes, *stream);
    backward.enqueue(*stream);
  }
  stream->synchronize();
  Results results{out.download(), lse.download(), {}, {}, {}};
  if (kernels.dq) {
    results.dq = dqOut.download();
    results.dk = dkOut.download();
    results.dv = dvOut.download();
  }
  for (auto [bytes, what] :
       {std::pair{&results.out, "out"}, std::pair{&results.dq, "dq"},
        std::pair{&results.dk, "dk"}, std::pair{&results.dv, "dv"}})
    EXPECT_TRUE(allWritten(*bytes, elementBytes, what));
  EXPECT_TRUE(allWritten(results.lse, sizeof(float), "lse"));
  return results;
}

void AttentionStridedGpuTest::check(const AttentionShape &shape, DType dtype,
                                    const LoadedKernels &views,
                                    const LoadedKernels &contiguous,
                                    const AttentionVariant &variant) {
  const std::size_t elementBytes = dtypeBytes(dtype);
  const std::int64_t D = shape.headDim;
  const std::int64_t qWidth = shape.heads * D;
  const std::int64_t kvWidth = shape.kvHeads * D;
  // Columns of the fused buffers: q, k, v, then padding; out, then padding.
  const std::int64_t kColumn = qWidth, vColumn = qWidth + kvWidth;
  const std::int64_t qkvWidth = qWidth + 2 * kvWidth + kPadding;
  const std::int64_t outWidth = qWidth + kPadding;

  // The variant's values (dropout's p, seed and offset), for every kernel.
  std::vector<const KernelSpec *> specs = views.specs;
  specs.insert(specs.end(), contiguous.specs.begin(), contiguous.specs.end());
  VariantArgs variantArgs(variantParams(variant, shape, specs));
  const ArgBindings &bindings = variantArgs.bindings();

  const Bytes qHost =
      encode(randomTensor(shape.query(), dtype, 1).values, dtype);
  const Bytes kHost =
      encode(randomTensor(shape.keyValue(), dtype, 2).values, dtype);
  const Bytes vHost =
      encode(randomTensor(shape.keyValue(), dtype, 3).values, dtype);
  const Bytes doutHost =
      encode(randomTensor(shape.query(), dtype, 4).values, dtype);

  // Contiguous, the twins and the group's contiguous kernels: the same bits.
  const Results twin = runContiguous(shape, dtype, views, bindings, qHost,
                                     kHost, vHost, doutHost);
  const Results plain = runContiguous(shape, dtype, contiguous, bindings, qHost,
                                      kHost, vHost, doutHost);
  if (HasFailure())
    return;
  EXPECT_TRUE(sameResults(twin, plain, elementBytes,
                          "the twin against the contiguous kernels"));

  // Views: q, k, v of one fused buffer, out and dout of merged ones, dq, dk,
  // dv of a fused gradient buffer; padding around them.
  Fused qkvHost(shape.batch, shape.seqQ, qkvWidth, elementBytes, kPaddingBytes);
  qkvHost.scatter(qHost, 0, shape.heads, D);
  qkvHost.scatter(kHost, kColumn, shape.kvHeads, D);
  qkvHost.scatter(vHost, vColumn, shape.kvHeads, D);
  Fused doutFused(shape.batch, shape.seqQ, outWidth, elementBytes,
                  kPaddingBytes);
  doutFused.scatter(doutHost, 0, shape.heads, D);
  // The outputs: NaN in the views, the padding pattern outside them.
  Fused outFused(shape.batch, shape.seqQ, outWidth, elementBytes,
                 kPaddingBytes);
  outFused.scatter(Bytes(qHost.size(), kNaNBytes), 0, shape.heads, D);
  Fused gradFused(shape.batch, shape.seqQ, qkvWidth, elementBytes,
                  kPaddingBytes);
  gradFused.scatter(Bytes(qHost.size(), kNaNBytes), 0, shape.heads, D);
  gradFused.scatter(Bytes(kHost.size(), kNaNBytes), kColumn, shape.kvHeads, D);
  gradFused.scatter(Bytes(vHost.size(), kNaNBytes), vColumn, shape.kvHeads, D);

  DeviceBuffer qkv = uploaded("qkv", qkvHost.bytes);
  DeviceBuffer merged = uploaded("out (merged)", outFused.bytes);
  DeviceBuffer doutMerged = uploaded("dout (merged)", doutFused.bytes);
  DeviceBuffer grad = uploaded("dqkv", gradFused.bytes);
  DeviceBuffer stridedLse("lse", twin.lse.size());
  stridedLse.fill(kNaNBytes, stream->get());
  auto column = [&](const DeviceBuffer &buffer, std::int64_t c) {
    return buffer.get() + static_cast<CUdeviceptr>(c) * elementBytes;
  };
  const Strides qkvStrides = qkvHost.strides(D);
  const Strides outStrides = outFused.strides(D);
  AttentionBuffers forwardViews{qkv.get(), column(qkv, kColumn),
                                column(qkv, vColumn), merged.get(),
                                stridedLse.get()};
  forwardViews.strides = {qkvStrides, qkvStrides, qkvStrides, outStrides};
  AttentionLaunch(*views.forward, shape, forwardViews, bindings)
      .enqueue(*stream);
  if (views.dq) {
    AttentionBackwardBuffers backwardViews{
        qkv.get(),    column(qkv, kColumn),  column(qkv, vColumn),
        merged.get(), stridedLse.get(),      doutMerged.get(),
        grad.get(),   column(grad, kColumn), column(grad, vColumn)};
    backwardViews.strides = {qkvStrides, qkvStrides, qkvStrides, outStrides,
                             outStrides, qkvStrides, qkvStrides, qkvStrides};
    AttentionBackwardLaunch stridedBackward(
        *views.delta, *views.dkdv, *views.dq, shape, backwardViews, bindings);
    stridedBackward.fillDelta(kNaNBytes, *stream);
    stridedBackward.enqueue(*stream);
  }
  stream->synchronize();

  outFused.bytes = merged.download();
  gradFused.bytes = grad.download();
  // The inputs too: a kernel must not write what it reads.
  Fused qkvAfter = qkvHost, doutAfter = doutFused;
  qkvAfter.bytes = qkv.download();
  doutAfter.bytes = doutMerged.download();
  EXPECT_TRUE(qkvAfter.bytes == qkvHost.bytes) << "qkv changed";
  EXPECT_TRUE(doutAfter.bytes == doutFused.bytes) << "dout changed";
  EXPECT_TRUE(outFused.paddingIs(qWidth, kPaddingBytes, "out"));
  EXPECT_TRUE(sameBits(stridedLse.download(), twin.lse, sizeof(float), "lse"));
  EXPECT_TRUE(sameBits(outFused.gather(0, shape.heads, D), twin.out,
                       elementBytes, "out"));
  EXPECT_TRUE(gradFused.paddingIs(qkvWidth - kPadding, kPaddingBytes, "dqkv"));
  if (!views.dq)
    return;
  EXPECT_TRUE(sameBits(gradFused.gather(0, shape.heads, D), twin.dq,
                       elementBytes, "dq"));
  EXPECT_TRUE(sameBits(gradFused.gather(kColumn, shape.kvHeads, D), twin.dk,
                       elementBytes, "dk"));
  EXPECT_TRUE(sameBits(gradFused.gather(vColumn, shape.kvHeads, D), twin.dv,
                       elementBytes, "dv"));
}

/// Whether every attention tensor (rank-4 memref) of `spec` is strided
/// (`strided`) or every one contiguous.
::testing::AssertionResult attentionTensorsAre(const KernelSpec &spec,
                                               bool strided) {
  // A fused dQ's f32 dq_accum is the runtime's own scratch, never a view.
  for (const KernelParam &param : spec.params)
    if (param.kind == ParamKind::Memref && param.rank == 4 &&
        param.name != "dq_accum" && param.strided != strided)
      return ::testing::AssertionFailure()
             << spec.name << " parameter " << param.name << " is "
             << (param.strided ? "strided" : "contiguous");
  return ::testing::AssertionSuccess();
}

// The library's twins are its plain and dropout groups' default tiles, bf16
// and f16: a plain query gets the contiguous kernels, a views query the
// twins, and the GPT's groups (causal, head_dim 64 and 128) have twins.
TEST_F(AttentionStridedGpuTest, ViewsQueriesGetTheTwinsAndPlainOnesNever) {
  for (DType dtype : {DType::BF16, DType::F16})
    for (std::int64_t headDim : {64, 128})
      for (const char *variant : {"", "dropout"})
        for (const char *op : {kAttentionForwardOp, kAttentionBackwardOp}) {
          KernelQuery query{op, dtype, headDim, true, variant, true};
          SCOPED_TRACE(query.describe());
          ASSERT_EQ(library->candidates(query).size(), 1u)
              << "one twin, the default tile's";
        }
  std::size_t twins = 0;
  for (const KernelSpec &spec : library->kernels()) {
    if (!isAttentionOp(spec.op) || spec.op == kAttentionDsinksOp)
      continue;
    EXPECT_TRUE(attentionTensorsAre(spec, spec.views));
    EXPECT_EQ(spec.views, spec.name.find("_views") != std::string::npos)
        << spec.name;
    if (!spec.views)
      continue;
    ++twins;
    EXPECT_TRUE(spec.variant.empty() || spec.variant == "dropout") << spec.name;
    EXPECT_NE(spec.dtype, DType::F32) << spec.name;
    // Its group without views has the contiguous default it twins.
    KernelQuery plain = spec.query();
    plain.views = false;
    const KernelSpec &contiguous = library->find(plain);
    EXPECT_FALSE(contiguous.views) << contiguous.name;
    EXPECT_EQ(contiguous.config, spec.config) << spec.name;
    for (const KernelSpec *candidate : library->candidates(plain))
      EXPECT_FALSE(candidate->views) << candidate->name;
  }
  EXPECT_GT(twins, 0u);
}

// Sequence lengths that are no multiple of any tile (1, 17, 1000), grouped
// heads (4 query heads on 2 key/value heads); every twin group (bf16 and
// f16, every head dim, causal and not, plain and dropout), forward with the
// backward where the group has a backward twin.
TEST_F(AttentionStridedGpuTest, ViewsOfFusedBuffersMatchContiguousBitwise) {
  std::size_t checked = 0;
  for (const KernelQuery &group : library->groups()) {
    if (group.op != kAttentionForwardOp || !group.views)
      continue;
    KernelQuery plain = group;
    plain.views = false;
    // Groups whose strided backward spills (kernels/CMakeLists.txt) have a
    // forward twin only: compared without the backward.
    LoadedKernels views(*library, group, context->device());
    LoadedKernels contiguous(*library, plain, context->device(),
                             views.dq != nullptr);
    ASSERT_EQ(views.dq == nullptr, contiguous.dq == nullptr)
        << group.describe() << ": a backward twin without its contiguous "
        << "backward";
    AttentionVariant variant;
    if (group.variant == "dropout")
      variant.dropout = AttentionDropout{0.1f, 77, 3};
    for (std::int64_t seq : {1, 17, 1000}) {
      const AttentionShape shape{2, 4, 2, seq, seq, group.headDim};
      SCOPED_TRACE(views.describe() + " against " + contiguous.describe() +
                   " " + shape.describe());
      check(shape, group.dtype, views, contiguous, variant);
      if (HasFatalFailure())
        return;
    }
    ++checked;
  }
  EXPECT_GT(checked, 0u) << "no views groups in " << library->path();
}

// A view whose stride breaks the kernels' 16-byte chunks is refused before
// anything runs; so are strides for a contiguous kernel (a plain query's).
TEST_F(AttentionStridedGpuTest, RefusesMisalignedViewsAndContiguousKernels) {
  const AttentionShape shape{1, 2, 2, 17, 17, 64};
  KernelQuery query{kAttentionForwardOp, DType::BF16, shape.headDim, false};
  Kernel contiguous(library->find(query), context->device());
  query.views = true;
  Kernel forward(library->find(query), context->device());
  DeviceBuffer buffer("qkv", 1 << 20);
  AttentionBuffers views{buffer.get(), buffer.get(), buffer.get(), buffer.get(),
                         buffer.get()};
  views.strides.q = {17 * 200, 64, 199, 1}; // 398 bytes a row.
  try {
    AttentionLaunch(forward, shape, views);
    ADD_FAILURE() << "a 398-byte row stride was accepted";
  } catch (const Error &error) {
    EXPECT_NE(std::string(error.what()).find("not a multiple of 16"),
              std::string::npos)
        << error.what();
  }
  views.strides.q = {17 * 384, 64, 384, 1};
  try {
    AttentionLaunch(contiguous, shape, views);
    ADD_FAILURE() << "strides were accepted for " << contiguous.spec().name;
  } catch (const Error &error) {
    EXPECT_NE(std::string(error.what()).find(contiguous.spec().name),
              std::string::npos)
        << error.what();
  }
}

#endif // FA_GENERATED_KERNELS_DIR

} // namespace
