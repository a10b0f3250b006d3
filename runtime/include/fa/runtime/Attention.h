//===- Attention.h - Launching attention kernels ----------------*- C++ -*-===//
//
// The forward is one attention_fwd kernel: out and lse (natural log) from q,
// k and v. Grid: query_tiles x batch_heads, or persistent_query_tiles (a
// persistent kernel whose blocks loop over the query_tiles * batch_heads
// tiles; the runtime launches min(tiles, blocks resident on the GPU)), whose
// blocks may instead take their tiles from a tile counter zeroed before each
// launch (takesTileCounter). The backward is the three kernels of an
// attention_bwd entry, launched in this order on one stream (shapes as
// AttentionShape.h says):
//
//   attention_bwd_delta  delta[b,h,i] = sum_d dout[b,h,i,d] * out[b,h,i,d],
//                        in f32. Grid: query_tiles x batch_heads.
//   attention_bwd_dkdv   dk and dv, block_m keys per block, each summed over
//                        the query heads that share its kv head; writes every
//                        element (no zeroing). Grid: key_tiles x
//                        batch_kv_heads (x dkdv_parts = 2 where config
//                        split_dkdv: dv in blocks of z 0, dk in z 1).
//                        A backward that fuses dQ into it (takesDqAccum)
//                        also sums each block's part of dS k into dq_accum
//                        (f32 [batch, heads, seq_q, head_dim]; the first
//                        contributor stores, so it needs no zeroing),
//                        ordered per block_n query tile by dq_semaphores
//                        (i32 [batch, heads, dq_tiles], zeroed on the
//                        stream before every launch; the kernel counts them
//                        up).
//   attention_bwd        dq. Grid: query_tiles x batch_heads. Fused: only
//                        dq = scale * dq_accum in the dtype (no products).
//   attention_bwd_dsinks (sinks only, when the attention_bwd entry names one)
//                        dsinks[h] = -sum_{b,i} exp(sinks[h] - lse[b,h,i]) *
//                        delta[b,h,i]: writes every element, in a fixed
//                        order. Grid: heads. Launched last (it reads delta).
//
// dkdv and dq (unfused) recompute P = exp(scale * q k^T - lse) from the
// forward's lse; with dP = dout v^T and dS = P * (dP - delta):
//   dv = P^T dout,  dk = scale * dS^T q,  dq = scale * dS k.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_ATTENTION_H
#define FA_RUNTIME_ATTENTION_H

#include "fa/runtime/AttentionShape.h"
#include "fa/runtime/DeviceBuffer.h"
#include "fa/runtime/Kernel.h"
#include "fa/runtime/Stream.h"

#include <cstddef>
#include <cstdint>
#include <optional>

namespace fa {

/// Element strides of the [batch, heads, seq, head_dim] tensors of a
/// forward, each empty for contiguous row-major (the default) or four
/// strides with the innermost 1: the tensor is a view, e.g. one head of q
/// inside a fused [batch, seq, 3 * heads * head_dim] projection is
/// {seq * 3C, head_dim, 3C, 1} from its first element. Only kernels whose
/// manifest marks these parameters "strided" take them (KernelArgs throws
/// otherwise); every non-innermost stride times the element size must be a
/// multiple of 16 bytes and a view's pointer 16-byte aligned (the kernels
/// move rows in 16-byte chunks). Views written to (out, and the backward's
/// dq, dk, dv) must not overlap.
struct AttentionStrides {
  Strides q, k, v, out;
};

/// Device tensors of one attention problem, laid out as AttentionShape says
/// (or, with strides, as views).
struct AttentionBuffers {
  CUdeviceptr q = 0;
  CUdeviceptr k = 0;
  CUdeviceptr v = 0;
  CUdeviceptr out = 0;
  CUdeviceptr lse = 0;
  AttentionStrides strides = {}; // Contiguous unless set.
};

/// The backward's strides: the forward's tensors', dout (like out) and the
/// gradients dq, dk, dv (like q, k, v); as AttentionStrides, empty for
/// contiguous.
struct AttentionBackwardStrides {
  Strides q, k, v, out, dout, dq, dk, dv;
};

/// Device tensors of one backward: the forward's inputs and outputs, the
/// incoming gradient dout (shaped like out) and the gradients dq, dk and dv
/// (shaped like q, k and v).
struct AttentionBackwardBuffers {
  CUdeviceptr q = 0;
  CUdeviceptr k = 0;
  CUdeviceptr v = 0;
  CUdeviceptr out = 0;
  CUdeviceptr lse = 0;
  CUdeviceptr dout = 0;
  CUdeviceptr dq = 0;
  CUdeviceptr dk = 0;
  CUdeviceptr dv = 0;
  /// f32 [heads]: the sinks' gradient, for a backward with a dsinks kernel;
  /// 0 otherwise.
  CUdeviceptr dsinks = 0;
  AttentionBackwardStrides strides = {}; // Contiguous unless set.
};

/// The launch grid of `spec`, any attention kernel, for `shape`: its symbols
/// (query_tiles, batch_heads, key_tiles, batch_kv_heads, heads, dkdv_parts,
/// persistent_query_tiles) resolved. Without the loaded kernel's occupancy,
/// persistent_query_tiles is every tile, attentionQueryTiles (one block per
/// tile): a correct launch and the largest, for checking the launch limits
/// before any kernel is loaded. Launches take the Kernel overload.
Dim3 attentionGrid(const KernelSpec &spec, const AttentionShape &shape);

/// The grid `kernel` launches with for `shape`: attentionGrid(spec), but a
/// persistent forward (grid persistent_query_tiles, whose blocks loop over
/// the tiles t = blockIdx.x, t + gridDim.x, ...) gets
/// persistentAttentionBlocks of its occupancy on this GPU. Throws as
/// persistentAttentionBlocks does.
Dim3 attentionGrid(const Kernel &kernel, const AttentionShape &shape);

/// The bytes of a forward's tile counter: one i32.
constexpr std::size_t kTileCounterBytes = sizeof(std::int32_t);

/// Whether `kernel` takes a tile counter: a parameter "tile_counter", an
/// i32 memref of rank 1 (memref<1xi32>), from which a persistent forward's
/// blocks take their next tile by atomic increment (a dynamic tile
/// scheduler). The kernel never resets it: every launch must find it zero,
/// so each is preceded on its stream by zeroTileCounter. Throws, naming the
/// kernel, for a tile_counter of another kind or rank.
bool takesTileCounter(const KernelSpec &kernel);

/// The binding of the tile counter at `counter`: one i32.
I32MemrefArg tileCounterArg(CUdeviceptr counter);

/// Zeroes the tile counter at `counter` on `stream`, asynchronously, for
/// `kernel`'s next launch on that stream. Throws, naming the kernel, when
/// the driver refuses.
void zeroTileCounter(CUdeviceptr counter, const KernelSpec &kernel,
                     CUstream stream);

/// The tiles of a forward, query_tiles * batch_heads: ceil(seq_q / block_m)
/// * batch * heads. Throws, naming the kernel, for one without block_m.
std::int64_t attentionQueryTiles(const KernelSpec &kernel,
                                 const AttentionShape &shape);

/// The blocks of a persistent forward (grid persistent_query_tiles):
/// persistentGridBlocks of its tiles (attentionQueryTiles).
std::int64_t persistentAttentionBlocks(const KernelSpec &kernel,
                                       const AttentionShape &shape,
                                       std::int64_t residentBlocks);

/// A backward that fuses dQ into its dkdv kernel: dkdv sums the partial
/// products dS k of its key tiles into dq_accum, ordered per query tile by
/// dq_semaphores, and the attention_bwd kernel only scales and converts
/// dq_accum into dq.
///
/// Whether `kernel` takes dq_accum: a parameter "dq_accum", an f32 memref
/// of rank 4 ([batch, heads, seq_q, head_dim]). Throws, naming the kernel,
/// for a dq_accum of another kind, dtype or rank.
bool takesDqAccum(const KernelSpec &kernel);

/// Whether `kernel` takes dq_semaphores: a parameter "dq_semaphores", an
/// i32 memref of rank 3 ([batch, heads, dq_tiles]). Throws, naming the
/// kernel, for dq_semaphores of another kind or rank.
bool takesDqSemaphores(const KernelSpec &kernel);

/// Whether the backward of `dkdv` and `dq` (its attention_bwd kernel) fuses
/// dQ into dkdv: dkdv takes both dq_accum and dq_semaphores and dq takes
/// dq_accum. False when none of them does; throws, naming the kernels, for
/// anything in between (a dq_accum nothing writes or nothing reads).
bool fusesDqIntoDkDv(const KernelSpec &dkdv, const KernelSpec &dq);

/// The bytes of dq_accum for `shape`: f32 [batch, heads, seq_q, head_dim].
std::size_t dqAccumBytes(const AttentionShape &shape);

/// The query tiles of `dkdv`'s dq_semaphores: ceil(seq_q / block_n), its
/// config's block_n. Throws, naming the kernel, for one without block_n.
std::int64_t dqSemaphoreTiles(const KernelSpec &dkdv,
                              const AttentionShape &shape);

/// The bytes of `dkdv`'s dq_semaphores for `shape`: i32 [batch, heads,
/// dqSemaphoreTiles].
std::size_t dqSemaphoreBytes(const KernelSpec &dkdv,
                             const AttentionShape &shape);

/// The binding of dq_accum at `accum`: contiguous f32 [batch, heads, seq_q,
/// head_dim].
MemrefArg dqAccumArg(CUdeviceptr accum, const AttentionShape &shape);

/// The binding of `dkdv`'s dq_semaphores at `semaphores`: contiguous i32
/// [batch, heads, dqSemaphoreTiles].
I32MemrefArg dqSemaphoresArg(CUdeviceptr semaphores, const KernelSpec &dkdv,
                             const AttentionShape &shape);

/// Zeroes the `bytes` of dq_semaphores at `semaphores` on `stream`,
/// asynchronously, for `dkdv`'s next launch on that stream (the kernel
/// counts them up from zero and never resets them). Throws, naming the
/// kernel, when the driver refuses.
void zeroDqSemaphores(CUdeviceptr semaphores, std::size_t bytes,
                      const KernelSpec &dkdv, CUstream stream);

/// The alignment of each part of a backward's workspace (the C API's).
constexpr std::size_t kBackwardWorkspaceAlignment = 256;

/// Where a backward's scratch lies in one workspace (the C API's
/// fa_attention_backward_workspace_size), byte offsets from its start:
/// delta (f32 [batch, heads, seq_q]) at 0; for a backward that fuses dQ
/// (fusesDqIntoDkDv), then dq_accum and dq_semaphores, each at the next
/// multiple of kBackwardWorkspaceAlignment, and `bytes` rounded up to it.
/// Without fusion `bytes` is delta's alone, as before fusion existed.
struct AttentionBackwardWorkspace {
  bool fusedDq = false;
  std::size_t deltaBytes = 0;
  std::size_t dqAccumOffset = 0, dqAccumBytes = 0;          // Fused only.
  std::size_t dqSemaphoresOffset = 0, dqSemaphoreBytes = 0; // Fused only.
  std::size_t bytes = 0;
};

/// The workspace of the backward of `dkdv` and `dq` for `shape`. Throws as
/// fusesDqIntoDkDv and dqSemaphoreTiles do.
AttentionBackwardWorkspace
attentionBackwardWorkspace(const KernelSpec &dkdv, const KernelSpec &dq,
                           const AttentionShape &shape);

/// The kernel arguments, by parameter name: memrefs q, k, v, out (the
/// kernel's dtype, with buffers.strides) and lse (f32), then those of
/// `variant`. Throws, naming the tensor, for strides that are not four
/// positive strides with the innermost 1, a non-innermost stride that is no
/// multiple of 16 bytes, or a strided tensor's pointer not 16-byte aligned.
ArgBindings attentionBindings(DType dtype, const AttentionShape &shape,
                              const AttentionBuffers &buffers,
                              const ArgBindings &variant = {});

/// The arguments of all the backward kernels, by parameter name: memrefs
/// q, k, v, out, dout, dq, dk, dv (`dtype`, with buffers.strides, checked as
/// attentionBindings does), lse and `delta` (f32, [batch, heads, seq_q]),
/// and dsinks (f32 [heads]) when buffers has it.
ArgBindings attentionBackwardBindings(DType dtype, const AttentionShape &shape,
                                      const AttentionBackwardBuffers &buffers,
                                      CUdeviceptr delta,
                                      const ArgBindings &variant = {});

/// The kernels of one backward.
struct AttentionBackwardKernels {
  const KernelSpec *delta = nullptr;
  const KernelSpec *dkdv = nullptr;
  const KernelSpec *dq = nullptr; // The attention_bwd kernel itself.
  /// The attention_bwd_dsinks kernel dq names, or null (no sinks, or a
  /// sinks backward compiled without dsinks).
  const KernelSpec *dsinks = nullptr;
};

/// `dq`, an attention_bwd kernel, with the companions it names; throws,
/// naming the kernel and key, when one is missing or computes another op.
AttentionBackwardKernels attentionBackwardKernels(const KernelLibrary &library,
                                                  const KernelSpec &dq);

/// An attention kernel bound to one problem and one set of buffers. Packing
/// happens once, so repeated launches (benchmarks) cost only the launch. A
/// kernel that takes a tile counter (takesTileCounter) gets one the launch
/// owns, zeroed on the stream before each launch. One counter per launch:
/// enqueue one AttentionLaunch on one stream at a time (two streams at once
/// would share the counter; the C API takes it from each call's workspace
/// instead).
class AttentionLaunch {
public:
  /// Throws unless `kernel` is an attention_fwd kernel for this head_dim.
  /// `variant` binds a variant kernel's extra parameters (VariantArgs in
  /// AttentionVariant.h); it must outlive the launch's use of its buffers.
  AttentionLaunch(const Kernel &kernel, const AttentionShape &shape,
                  const AttentionBuffers &buffers,
                  const ArgBindings &variant = {});

  void enqueue(const Stream &stream);

  /// Draws another dropout mask from the next launch on (Philox.h's
  /// offset): a training step's and layer's. Throws unless the kernel takes
  /// dropout_offset.
  void setDropoutOffset(std::uint32_t offset);

private:
  const Kernel &kernel;
  Dim3 grid;
  /// The kernel's tile counter, when it takes one; before `args`, which
  /// binds it.
  std::optional<DeviceBuffer> tileCounter;
  KernelArgs args;
};

/// One of the backward kernels, named after what it writes.
enum class AttentionBackwardStage { Delta, DkDv, Dq, Dsinks };

/// The backward kernels bound to one problem and one set of buffers; owns
/// delta, the f32 [batch, heads, seq_q] between them, and for a backward
/// that fuses dQ into dkdv (fusesDqIntoDkDv) its dq_accum and
/// dq_semaphores, zeroed on the stream before every launch of dkdv (alone
/// too). enqueue(stream) launches delta, dkdv and dq (then dsinks, if
/// given), in that order, on one stream. As AttentionLaunch's counter: one
/// stream at a time per launch object.
class AttentionBackwardLaunch {
public:
  /// Throws unless `dq` is an attention_bwd kernel for this head_dim and
  /// `delta` and `dkdv` (and `dsinks`, if given) are the kernels it names.
  /// `variant` as AttentionLaunch's: the kernels take the same extra
  /// parameters. With `dsinks`, buffers.dsinks must be set, and without it
  /// must not be (nothing would write it).
  AttentionBackwardLaunch(const Kernel &delta, const Kernel &dkdv,
                          const Kernel &dq, const AttentionShape &shape,
                          const AttentionBackwardBuffers &buffers,
                          const ArgBindings &variant = {},
                          const Kernel *dsinks = nullptr);

  void enqueue(const Stream &stream);

  /// Launches one kernel alone, to time it or to run the backward step by
  /// step. It reads what the earlier stages write (dkdv, dq and dsinks read
  /// delta), so it computes its part of the gradients only after they have
  /// run. Throws for Dsinks without a dsinks kernel.
  void enqueue(AttentionBackwardStage stage, const Stream &stream);

  /// Whether the launch computes dsinks.
  bool hasDsinks() const { return dsinksKernel != nullptr; }

  /// Whether dkdv sums dQ (the launch owns dq_accum and dq_semaphores).
  bool fusesDq() const { return dqAccum.has_value(); }

  /// Sets every byte of delta to `value`: with 0xFF (NaN), any element the
  /// delta kernel fails to write reaches dq, dk and dv.
  void fillDelta(std::uint8_t value, const Stream &stream);

  /// AttentionLaunch::setDropoutOffset for every kernel that takes the
  /// offset (the forward's mask regenerated); throws if none does.
  void setDropoutOffset(std::uint32_t offset);

private:
  const Kernel &deltaKernel;
  const Kernel &dkdvKernel;
  const Kernel &dqKernel;
  // The dq kernel is checked first: the others are checked against it.
  Dim3 dqGrid;
  Dim3 deltaGrid;
  Dim3 dkdvGrid;
  DeviceBuffer deltaBuffer;
  /// A fused backward's dq_accum and dq_semaphores (fusesDqIntoDkDv);
  /// before the arguments, which bind them.
  std::optional<DeviceBuffer> dqAccum;
  std::optional<DeviceBuffer> dqSemaphores;
  KernelArgs deltaArgs;
  KernelArgs dkdvArgs;
  KernelArgs dqArgs;
  const Kernel *dsinksKernel;
  Dim3 dsinksGrid;
  std::optional<KernelArgs> dsinksArgs;
};

} // namespace fa

#endif // FA_RUNTIME_ATTENTION_H
