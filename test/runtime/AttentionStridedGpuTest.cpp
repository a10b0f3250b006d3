//===- AttentionStridedGpuTest.cpp - Kernels on views of fused buffers ----===//
//
// The generated library's attention kernels read q, k, v (and the backward's
// out, dout) and write out (and dq, dk, dv) as strided views: q, k and v as
// heads of one fused [batch, seq, (heads + 2 kv_heads) * head_dim] buffer
// (the GPT's QKV product), out in a merged [batch, seq, heads * head_dim]
// buffer, dq, dk and dv in a fused gradient buffer like qkv. Each run must
// give the same bits as the same kernel on contiguous copies, and leave
// every element of the fused buffers outside the views (a padding column
// block on every row) as it was. Skipped without a GPU.
//
//===----------------------------------------------------------------------===//

#include "GpuTesting.h"

#include "fa/runtime/Attention.h"
#include "fa/runtime/Kernel.h"
#include "fa/runtime/KernelLibrary.h"

#include <cstring>
#include <optional>

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

class AttentionStridedGpuTest : public GpuTest {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped())
      return;
    library.emplace(KernelLibrary::load(FA_GENERATED_KERNELS_DIR));
  }

  /// Runs the forward and backward of `shape` with these kernels on
  /// contiguous tensors and on views, and compares.
  void check(const AttentionShape &shape, DType dtype, const Kernel &forward,
             const Kernel &delta, const Kernel &dkdv, const Kernel &dq);

  std::optional<KernelLibrary> library;
};

void AttentionStridedGpuTest::check(const AttentionShape &shape, DType dtype,
                                    const Kernel &forward, const Kernel &delta,
                                    const Kernel &dkdv, const Kernel &dq) {
  const std::size_t elementBytes = dtypeBytes(dtype);
  const std::int64_t D = shape.headDim;
  const std::int64_t qWidth = shape.heads * D;
  const std::int64_t kvWidth = shape.kvHeads * D;
  // Columns of the fused buffers: q, k, v, then padding; out, then padding.
  const std::int64_t kColumn = qWidth, vColumn = qWidth + kvWidth;
  const std::int64_t qkvWidth = qWidth + 2 * kvWidth + kPadding;
  const std::int64_t outWidth = qWidth + kPadding;

  const Bytes qHost =
      encode(randomTensor(shape.query(), dtype, 1).values, dtype);
  const Bytes kHost =
      encode(randomTensor(shape.keyValue(), dtype, 2).values, dtype);
  const Bytes vHost =
      encode(randomTensor(shape.keyValue(), dtype, 3).values, dtype);
  const Bytes doutHost =
      encode(randomTensor(shape.query(), dtype, 4).values, dtype);

  // Contiguous.
  DeviceBuffer q = uploaded("q", qHost), k = uploaded("k", kHost),
               v = uploaded("v", vHost), dout = uploaded("dout", doutHost);
  DeviceBuffer out("out", qHost.size()), dqOut("dq", qHost.size()),
      dkOut("dk", kHost.size()), dvOut("dv", vHost.size());
  DeviceBuffer lse("lse", tensorBytes(shape.logSumExp(), DType::F32));
  for (DeviceBuffer *buffer : {&out, &dqOut, &dkOut, &dvOut, &lse})
    buffer->fill(kNaNBytes, stream->get());
  AttentionLaunch(forward, shape,
                  {q.get(), k.get(), v.get(), out.get(), lse.get()})
      .enqueue(*stream);
  AttentionBackwardLaunch backward(
      delta, dkdv, dq, shape,
      AttentionBackwardBuffers{q.get(), k.get(), v.get(), out.get(), lse.get(),
                               dout.get(), dqOut.get(), dkOut.get(),
                               dvOut.get()});
  backward.fillDelta(kNaNBytes, *stream);
  backward.enqueue(*stream);
  stream->synchronize();
  const Bytes outBytes = out.download(), lseBytes = lse.download();
  const Bytes dqBytes = dqOut.download(), dkBytes = dkOut.download(),
              dvBytes = dvOut.download();
  for (auto [bytes, what] :
       {std::pair{&outBytes, "out"}, std::pair{&dqBytes, "dq"},
        std::pair{&dkBytes, "dk"}, std::pair{&dvBytes, "dv"}})
    ASSERT_TRUE(allWritten(*bytes, elementBytes, what));
  ASSERT_TRUE(allWritten(lseBytes, sizeof(float), "lse"));

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
  DeviceBuffer stridedLse("lse", lseBytes.size());
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
  AttentionLaunch(forward, shape, forwardViews).enqueue(*stream);
  AttentionBackwardBuffers backwardViews{
      qkv.get(),    column(qkv, kColumn),  column(qkv, vColumn),
      merged.get(), stridedLse.get(),      doutMerged.get(),
      grad.get(),   column(grad, kColumn), column(grad, vColumn)};
  backwardViews.strides = {qkvStrides, qkvStrides, qkvStrides, outStrides,
                           outStrides, qkvStrides, qkvStrides, qkvStrides};
  AttentionBackwardLaunch stridedBackward(delta, dkdv, dq, shape,
                                          backwardViews);
  stridedBackward.fillDelta(kNaNBytes, *stream);
  stridedBackward.enqueue(*stream);
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
  EXPECT_TRUE(gradFused.paddingIs(qkvWidth - kPadding, kPaddingBytes, "dqkv"));
  EXPECT_TRUE(sameBits(stridedLse.download(), lseBytes, sizeof(float), "lse"));
  EXPECT_TRUE(sameBits(outFused.gather(0, shape.heads, D), outBytes,
                       elementBytes, "out"));
  EXPECT_TRUE(sameBits(gradFused.gather(0, shape.heads, D), dqBytes,
                       elementBytes, "dq"));
  EXPECT_TRUE(sameBits(gradFused.gather(kColumn, shape.kvHeads, D), dkBytes,
                       elementBytes, "dk"));
  EXPECT_TRUE(sameBits(gradFused.gather(vColumn, shape.kvHeads, D), dvBytes,
                       elementBytes, "dv"));
}

// Sequence lengths that are no multiple of any tile (1, 17, 1000), grouped
// heads (4 query heads on 2 key/value heads), causal and not, head_dim 64
// and 128, bf16; every forward candidate of each group (tile shapes,
// register or shared query, staged output) with the group's backward.
TEST_F(AttentionStridedGpuTest, ViewsOfFusedBuffersMatchContiguousBitwise) {
  const DType dtype = DType::BF16;
  for (std::int64_t headDim : {64, 128})
    for (bool causal : {false, true}) {
      const KernelSpec &dqSpec = library->find(
          KernelQuery{kAttentionBackwardOp, dtype, headDim, causal});
      AttentionBackwardKernels backward =
          attentionBackwardKernels(*library, dqSpec);
      std::vector<const KernelSpec *> specs = library->candidates(
          KernelQuery{kAttentionForwardOp, dtype, headDim, causal});
      specs.insert(specs.end(), {backward.delta, backward.dkdv, &dqSpec});
      for (const KernelSpec *spec : specs)
        for (const KernelParam &param : spec->params)
          if (param.kind == ParamKind::Memref && param.rank == 4)
            ASSERT_TRUE(param.strided)
                << spec->name << " parameter " << param.name
                << " is not strided in " << library->path();
      Kernel delta(*backward.delta, context->device());
      Kernel dkdv(*backward.dkdv, context->device());
      Kernel dq(dqSpec, context->device());
      specs.resize(specs.size() - 3);
      for (const KernelSpec *forwardSpec : specs) {
        Kernel forward(*forwardSpec, context->device());
        for (std::int64_t seq : {1, 17, 1000}) {
          const AttentionShape shape{2, 4, 2, seq, seq, headDim};
          SCOPED_TRACE(forwardSpec->name + " and " + dqSpec.name + " " +
                       shape.describe());
          check(shape, dtype, forward, delta, dkdv, dq);
          if (HasFatalFailure())
            return;
        }
      }
    }
}

// A view whose stride breaks the kernels' 16-byte chunks, and strides for a
// kernel that reads none, are refused before anything runs.
TEST_F(AttentionStridedGpuTest, RefusesMisalignedViews) {
  const AttentionShape shape{1, 2, 2, 17, 17, 64};
  const KernelSpec &spec = library->find(
      KernelQuery{kAttentionForwardOp, DType::BF16, shape.headDim, false});
  Kernel forward(spec, context->device());
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
}

#endif // FA_GENERATED_KERNELS_DIR

} // namespace
