//===- TrainKernels.cpp - Launching the training loop's own kernels -------===//
//
// Checks the arguments, works out each kernel's grid (TrainKernelsGeometry.h)
// and launches TrainKernels.cu's entries through the driver API.
//
//===----------------------------------------------------------------------===//

#include "fa/train/TrainKernels.h"

#include "fa/runtime/Driver.h"
#include "fa/runtime/Error.h"
#include "fa/runtime/Launch.h"

#include "TrainKernelsGeometry.h"

#include <cmath>
#include <initializer_list>
#include <string>

// TrainKernels.cu built for FA_CUDA_ARCH, embedded at build time.
extern "C" const unsigned char faTrainKernelsFatbin[];

namespace fa::train {

using namespace geometry;

namespace {

/// The kernel `<kernel>_<dtype>`; `what` says what is being done.
std::string entryFor(const char *kernel, DType dtype, const char *what) {
  if (dtype == DType::F16)
    throw Error(std::string(what) +
                ": training kernels support bf16 and f32, not f16");
  return std::string(kernel) + "_" + dtypeName(dtype);
}

void requireAtLeast(const char *what, const char *name, std::int64_t value,
                    std::int64_t minimum) {
  if (value < minimum)
    throw Error(std::string(what) + ": " + name + " must be at least " +
                std::to_string(minimum) + ", got " + std::to_string(value));
}

/// x by y blocks of `threads` threads; throws beyond the grid's limits.
LaunchConfig blocks(const char *what, std::int64_t x, std::int64_t y = 1,
                    Dim3 threads = {kBlockThreads, 1, 1}) {
  if (x > kMaxGridX || y > kMaxGridY)
    throw Error(std::string(what) + ": a grid of " + std::to_string(x) + " x " +
                std::to_string(y) + " blocks exceeds the limits " +
                std::to_string(kMaxGridX) + " x " + std::to_string(kMaxGridY));
  LaunchConfig config;
  config.grid = {static_cast<unsigned>(x), static_cast<unsigned>(y), 1};
  config.block = threads;
  return config;
}

void launch(const Module &module, const std::string &entry,
            const LaunchConfig &config, void **args, const Stream &stream) {
  launchKernel(module.function(entry), config, stream.get(), args, entry);
}

/// A grid-stride kernel over n elements (nothing for n = 0).
void launchElementwise(const Module &module, const std::string &entry,
                       std::int64_t n, void **args, const Stream &stream) {
  if (n > 0)
    launch(module, entry, blocks(entry.c_str(), elementwiseBlocks(n)), args,
           stream);
}

/// Whether a chunked elementwise kernel may move 16-byte chunks: every
/// pointer 16-byte aligned (the kernel handles any n).
int chunkable(std::initializer_list<CUdeviceptr> pointers) {
  for (CUdeviceptr pointer : pointers)
    if (pointer % 16 != 0)
      return 0;
  return 1;
}

/// Elements of `dtype` in one 16-byte chunk (the Lanes<T> of
/// TrainKernels.cu).
std::int64_t chunkElements(DType dtype) {
  return 16 / static_cast<std::int64_t>(dtypeBytes(dtype));
}

/// A chunked elementwise kernel over n elements: its grid sized for the
/// chunks when `chunked`, so that no thread waits for work.
void launchChunked(const Module &module, const std::string &entry, DType dtype,
                   std::int64_t n, int chunked, void **args,
                   const Stream &stream) {
  const std::int64_t lanes = chunkElements(dtype);
  launchElementwise(module, entry, chunked ? (n + lanes - 1) / lanes : n, args,
                    stream);
}

/// result[0] = sum of values (squared by `partialsKernel` or not): the
/// partial sums of fixed spans into workspace, then one block over them.
void reduce(const Module &module, const char *what, const char *partialsKernel,
            CUdeviceptr values, CUdeviceptr result, std::int64_t n,
            CUdeviceptr workspace, const Stream &stream) {
  requireAtLeast(what, "n", n, 0);
  std::int64_t count = reductionBlocks(n), span = reductionSpan(n);
  void *partialArgs[] = {&values, &workspace, &n, &span};
  launch(module, partialsKernel, blocks(what, count), partialArgs, stream);
  void *finishArgs[] = {&workspace, &result, &count};
  launch(module, "reduce_finish", blocks(what, 1), finishArgs, stream);
}

/// Copies between packed [B, T, parts * C] and `parts` head-major tensors
/// [B, H, T, D] (part1 and part2 unused for one part), either way.
void moveHeads(const Module &module, const char *what, bool toPacked,
               DType dtype, CUdeviceptr packed, CUdeviceptr part0,
               CUdeviceptr part1, CUdeviceptr part2, int parts,
               std::int64_t batch, std::int64_t seq, std::int64_t heads,
               std::int64_t headDim, const Stream &stream) {
  std::string entry =
      entryFor(toPacked ? "pack_heads" : "unpack_heads", dtype, what);
  requireAtLeast(what, "batch", batch, 0);
  requireAtLeast(what, "seq", seq, 0);
  requireAtLeast(what, "heads", heads, 0);
  requireAtLeast(what, "head_dim", headDim, 0);
  const std::int64_t rows = batch * seq;
  if (rows == 0 || heads * headDim == 0)
    return;
  // 16-byte chunks when a head's D elements are whole chunks and every
  // tensor starts on a 16-byte boundary (unused parts are 0, which is).
  int chunked = headDim % chunkElements(dtype) == 0 &&
                chunkable({packed, part0, part1, part2});
  void *packArgs[] = {&part0, &part1,   &part2, &packed, &seq,
                      &heads, &headDim, &parts, &chunked};
  void *unpackArgs[] = {&packed, &part0,   &part1, &part2,  &seq,
                        &heads,  &headDim, &parts, &chunked};
  launch(module, entry, blocks(what, rows), toPacked ? packArgs : unpackArgs,
         stream);
}

} // namespace

TrainKernels::TrainKernels()
    : module(faTrainKernelsFatbin, "the training kernels (TrainKernels.cu)"),
      biasPartials("the bias gradient's partial sums",
                   kBiasPartialFloats * sizeof(float)) {}

void TrainKernels::embeddingForward(DType dtype, CUdeviceptr tokens,
                                    CUdeviceptr wte, CUdeviceptr wpe,
                                    CUdeviceptr x, std::int64_t batch,
                                    std::int64_t seq, std::int64_t channels,
                                    const Stream &stream) const {
  const char *what = "embedding forward";
  std::string entry = entryFor("embedding_forward", dtype, what);
  requireAtLeast(what, "batch", batch, 0);
  requireAtLeast(what, "seq", seq, 0);
  requireAtLeast(what, "channels", channels, 0);
  if (batch * seq == 0 || channels == 0)
    return;
  void *args[] = {&tokens, &wte, &wpe, &x, &seq, &channels};
  launch(module, entry, blocks(what, batch * seq), args, stream);
}

void TrainKernels::embeddingBackward(DType dtype, CUdeviceptr tokens,
                                     CUdeviceptr dx, CUdeviceptr dwte,
                                     CUdeviceptr dwpe, std::int64_t batch,
                                     std::int64_t seq, std::int64_t channels,
                                     std::int64_t vocab, bool accumulate,
                                     CUdeviceptr seen,
                                     const Stream &stream) const {
  const char *what = "embedding backward";
  std::string wteEntry = entryFor("embedding_backward_wte", dtype, what);
  std::string wpeEntry = entryFor("embedding_backward_wpe", dtype, what);
  requireAtLeast(what, "batch", batch, 0);
  requireAtLeast(what, "seq", seq, 0);
  requireAtLeast(what, "channels", channels, 0);
  requireAtLeast(what, "vocab", vocab, 0);
  if (channels == 0)
    return;
  std::int64_t rows = batch * seq;
  int accumulateFlag = accumulate ? 1 : 0;
  const std::int64_t chunks = channelChunks(channels);
  if (vocab > 0) {
    if (seen == 0)
      throw Error("embedding backward: the seen-token scratch is null");
    checkCu(driver().cuMemsetD8Async(seen, 0, static_cast<std::size_t>(vocab),
                                     stream.get()),
            "embedding backward: clearing the seen-token scratch");
    void *markArgs[] = {&tokens, &seen, &rows, &vocab};
    launchElementwise(module, "mark_tokens", rows, markArgs, stream);
    void *args[] = {&tokens,   &dx,   &dwte,          &rows,
                    &channels, &seen, &accumulateFlag};
    launch(module, wteEntry, blocks(what, vocab, chunks), args, stream);
  }
  if (seq > 0) {
    void *args[] = {&dx, &dwpe, &batch, &seq, &channels};
    launch(module, wpeEntry, blocks(what, seq, chunks), args, stream);
  }
}

void TrainKernels::splitHeads(DType dtype, CUdeviceptr qkv, CUdeviceptr q,
                              CUdeviceptr k, CUdeviceptr v, std::int64_t batch,
                              std::int64_t seq, std::int64_t heads,
                              std::int64_t headDim,
                              const Stream &stream) const {
  moveHeads(module, "splitting heads", false, dtype, qkv, q, k, v, 3, batch,
            seq, heads, headDim, stream);
}

void TrainKernels::joinHeads(DType dtype, CUdeviceptr dq, CUdeviceptr dk,
                             CUdeviceptr dv, CUdeviceptr dqkv,
                             std::int64_t batch, std::int64_t seq,
                             std::int64_t heads, std::int64_t headDim,
                             const Stream &stream) const {
  moveHeads(module, "joining heads", true, dtype, dqkv, dq, dk, dv, 3, batch,
            seq, heads, headDim, stream);
}

void TrainKernels::mergeHeads(DType dtype, CUdeviceptr y, CUdeviceptr merged,
                              std::int64_t batch, std::int64_t seq,
                              std::int64_t heads, std::int64_t headDim,
                              const Stream &stream) const {
  moveHeads(module, "merging heads", true, dtype, merged, y, 0, 0, 1, batch,
            seq, heads, headDim, stream);
}

void TrainKernels::unmergeHeads(DType dtype, CUdeviceptr merged, CUdeviceptr y,
                                std::int64_t batch, std::int64_t seq,
                                std::int64_t heads, std::int64_t headDim,
                                const Stream &stream) const {
  moveHeads(module, "unmerging heads", false, dtype, merged, y, 0, 0, 1, batch,
            seq, heads, headDim, stream);
}

void TrainKernels::geluForward(DType dtype, CUdeviceptr u, CUdeviceptr g,
                               std::int64_t n, const Stream &stream) const {
  const char *what = "GELU forward";
  std::string entry = entryFor("gelu_forward", dtype, what);
  requireAtLeast(what, "n", n, 0);
  int chunked = chunkable({u, g});
  void *args[] = {&u, &g, &n, &chunked};
  launchChunked(module, entry, dtype, n, chunked, args, stream);
}

void TrainKernels::geluBackward(DType dtype, CUdeviceptr u, CUdeviceptr dg,
                                CUdeviceptr du, std::int64_t n,
                                const Stream &stream) const {
  const char *what = "GELU backward";
  std::string entry = entryFor("gelu_backward", dtype, what);
  requireAtLeast(what, "n", n, 0);
  int chunked = chunkable({u, dg, du});
  void *args[] = {&u, &dg, &du, &n, &chunked};
  launchChunked(module, entry, dtype, n, chunked, args, stream);
}

void TrainKernels::add(DType dtype, CUdeviceptr a, CUdeviceptr b,
                       CUdeviceptr out, std::int64_t n,
                       const Stream &stream) const {
  const char *what = "adding tensors";
  std::string entry = entryFor("add", dtype, what);
  requireAtLeast(what, "n", n, 0);
  int chunked = chunkable({a, b, out});
  void *args[] = {&a, &b, &out, &n, &chunked};
  launchChunked(module, entry, dtype, n, chunked, args, stream);
}

void TrainKernels::dropoutAdd(DType dtype, CUdeviceptr a, CUdeviceptr b,
                              CUdeviceptr out, std::int64_t n,
                              const DropoutDraw &draw, std::uint32_t site,
                              const Stream &stream) const {
  const char *what = "dropout";
  std::string entry = entryFor("dropout_add", dtype, what);
  requireAtLeast(what, "n", n, 0);
  if (!(draw.p >= 0.0f && draw.p < 1.0f))
    throw Error(std::string(what) + ": p must be in [0, 1), got " +
                std::to_string(draw.p));
  DropoutMask mask{draw.seed, site, draw.step, dropoutThreshold(draw.p),
                   dropoutScale(draw.p)};
  int chunked = a ? chunkable({a, b, out}) : chunkable({b, out});
  void *args[] = {&a, &b, &out, &n, &chunked, &mask};
  launchChunked(module, entry, dtype, n, chunked, args, stream);
}

void TrainKernels::biasGradient(DType dtype, CUdeviceptr dy, CUdeviceptr dbias,
                                std::int64_t rows, std::int64_t cols,
                                bool accumulate, const Stream &stream) const {
  const char *what = "bias gradient";
  std::string entry = entryFor("bias_gradient_partials", dtype, what);
  requireAtLeast(what, "rows", rows, 0);
  requireAtLeast(what, "cols", cols, 0);
  if (cols > kBiasPartialFloats)
    throw Error(std::string(what) + ": cols " + std::to_string(cols) +
                " exceeds the " + std::to_string(kBiasPartialFloats) +
                " the partial sums have room for");
  if (cols == 0)
    return;
  CUdeviceptr partials = biasPartials.get();
  std::int64_t spans = biasRowBlocks(rows, cols);
  std::int64_t span = biasRowSpan(rows, cols);
  // Each thread a 16-byte chunk of columns when the rows are whole chunks.
  const std::int64_t lanes = chunkElements(dtype);
  int chunked = cols % lanes == 0 && chunkable({dy});
  const std::int64_t blockColumns = kBiasColumns * (chunked ? lanes : 1);
  void *partialArgs[] = {&dy, &partials, &rows, &cols, &span, &chunked};
  launch(module, entry,
         blocks(what, ceilDiv(cols, blockColumns), spans,
                {kBiasColumns, kBiasRowLanes, 1}),
         partialArgs, stream);
  int accumulateFlag = accumulate ? 1 : 0;
  void *finishArgs[] = {&partials, &dbias, &cols, &spans, &accumulateFlag};
  launchElementwise(module, "bias_gradient_finish", cols, finishArgs, stream);
}

void TrainKernels::crossEntropy(DType dtype, CUdeviceptr logits,
                                CUdeviceptr targets, CUdeviceptr losses,
                                CUdeviceptr dlogits, std::int64_t rows,
                                std::int64_t vocab, float gradScale,
                                const Stream &stream) const {
  const char *what = "cross-entropy";
  std::string entry = entryFor("cross_entropy", dtype, what);
  requireAtLeast(what, "rows", rows, 0);
  requireAtLeast(what, "vocab", vocab, 1);
  if (rows == 0)
    return;
  // Four elements at a time when every row starts 16-byte aligned.
  int quads = vocab % 4 == 0 && chunkable({logits, dlogits});
  void *args[] = {&logits, &targets,   &losses, &dlogits,
                  &vocab,  &gradScale, &quads};
  launch(module, entry, blocks(what, crossEntropyBlocks(rows)), args, stream);
}

void TrainKernels::sum(CUdeviceptr values, CUdeviceptr result, std::int64_t n,
                       CUdeviceptr workspace, const Stream &stream) const {
  reduce(module, "summing", "reduce_sum_partials", values, result, n, workspace,
         stream);
}

void TrainKernels::sumOfSquares(CUdeviceptr values, CUdeviceptr result,
                                std::int64_t n, CUdeviceptr workspace,
                                const Stream &stream) const {
  reduce(module, "summing squares", "reduce_sum_of_squares_partials", values,
         result, n, workspace, stream);
}

std::int64_t TrainKernels::reductionWorkspaceFloats(std::int64_t n) {
  return reductionBlocks(n);
}

void TrainKernels::castFromF32(DType dtype, CUdeviceptr values, CUdeviceptr out,
                               std::int64_t n, const Stream &stream) const {
  const char *what = "casting from f32";
  std::string entry = entryFor("cast_from_f32", dtype, what);
  requireAtLeast(what, "n", n, 0);
  void *args[] = {&values, &out, &n};
  launchElementwise(module, entry, n, args, stream);
}

void adamW(const TrainKernels &kernels, DType dtype, const AdamWStep &hyper,
           CUdeviceptr params, CUdeviceptr grads, CUdeviceptr m, CUdeviceptr v,
           CUdeviceptr decay, CUdeviceptr normSquared, CUdeviceptr working,
           std::int64_t n, const Stream &stream) {
  const char *what = "AdamW step";
  std::string entry = entryFor("adamw", dtype, what);
  requireAtLeast(what, "step", hyper.step, 1);
  requireAtLeast(what, "n", n, 0);
  const double step = static_cast<double>(hyper.step);
  AdamWParams p{hyper.lr,
                hyper.beta1,
                hyper.beta2,
                hyper.eps,
                hyper.weightDecay,
                hyper.maxNorm,
                static_cast<float>(1.0 - std::pow(double{hyper.beta1}, step)),
                static_cast<float>(1.0 - std::pow(double{hyper.beta2}, step))};
  // Chunks of 4 f32 (and 4 decay flags, 4 working values) where every
  // pointer allows 16-byte accesses: not always on a ZeRO-1 shard.
  int chunked = chunkable({params, grads, m, v, decay, working});
  void *args[] = {&params,      &grads,   &m, &v,       &decay,
                  &normSquared, &working, &n, &chunked, &p};
  launchChunked(kernels.module, entry, DType::F32, n, chunked, args, stream);
}

} // namespace fa::train
