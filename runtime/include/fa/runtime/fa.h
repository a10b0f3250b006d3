/*===- fa.h - The runtime's C API -------------------------------*- C -*-===*\
 *
 * Runs the kernel library's attention and LayerNorm kernels on device memory
 * and a stream that the caller owns: the API a framework (the Python package
 * in python/, a C++ program) builds on. It needs no MLIR, only libcuda, which
 * it binds at run time.
 *
 * Contract:
 *  - A library is opened for one device. Its kernels run in that device's
 *    primary context, the one PyTorch and the CUDA runtime use: a call makes
 *    that context current for its launches and restores the caller's.
 *  - Nothing allocates device memory behind the caller's back. Launches that
 *    need scratch memory (the backward passes; the attention forward when its
 *    kernel takes its tiles from a counter) take a workspace: query its size
 *    (fa_*_workspace_size) and pass a buffer of at least that many bytes,
 *    aligned to 256 bytes. Launches that may run at once (other streams,
 *    other threads) need workspaces of their own.
 *  - Tensors are contiguous row-major (shapes below); pointers are CUdeviceptr
 *    values on the library's device. A launch is asynchronous on `stream`
 *    (0: the legacy default stream); errors the kernels hit surface on the
 *    stream, as with any CUDA launch.
 *  - Every function returns FA_SUCCESS or an error code; fa_last_error()
 *    then says, in this thread, what was being done and what went wrong.
 *  - Plans and libraries are thread-safe to use; a plan must not outlive its
 *    library. Kernels are loaded (JIT-compiled from PTX, cached by the driver)
 *    when the first plan that needs them is created, so that call may take
 *    long; the library keeps them until it is closed.
 *
 * Attention shapes (AttentionShape.h, AttentionVariant.h):
 *   q, out, dq, dout  [batch, heads, seq_q, head_dim]     dtype
 *   k, v, dk, dv      [batch, kv_heads, seq_kv, head_dim] dtype
 *   lse               [batch, heads, seq_q]               f32, natural log
 *   alibi_slopes      [heads] f32;  sinks, dsinks [heads] f32
 *   doc_ids           [batch, seq] int32, each row non-decreasing (the
 *                     kernels skip tiles by it; not checked here)
 * The softmax scale is compiled into the kernels: 1/sqrt(head_dim).
 *
 * LayerNorm shapes (LayerNorm.h): x, y, dy, dx [rows, cols] dtype; weight,
 * bias [cols] dtype; mean, rstd [rows] f32; dweight, dbias [cols] f32.
 *
\*===----------------------------------------------------------------------===*/

#ifndef FA_RUNTIME_FA_H
#define FA_RUNTIME_FA_H

#include <cuda.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FA_API_VERSION 2

typedef enum fa_status {
  FA_SUCCESS = 0,
  /* A null pointer, a size <= 0, a struct field out of range. */
  FA_ERROR_INVALID_ARGUMENT = 1,
  /* The library has no kernel for the problem (dtype, head dim, variant,
     LayerNorm width): fa_last_error() lists what it has. */
  FA_ERROR_UNSUPPORTED = 2,
  /* A missing or malformed kernel directory, manifest or tuning cache. */
  FA_ERROR_LIBRARY = 3,
  /* No CUDA driver or no such device. */
  FA_ERROR_NO_DEVICE = 4,
  /* A CUDA driver call failed (launch, module load, context). */
  FA_ERROR_CUDA = 5,
  /* A workspace smaller than the size queried. */
  FA_ERROR_WORKSPACE = 6,
  FA_ERROR_INTERNAL = 7
} fa_status;

typedef enum fa_dtype {
  FA_DTYPE_F32 = 0,
  FA_DTYPE_F16 = 1,
  FA_DTYPE_BF16 = 2
} fa_dtype;

typedef enum fa_causal {
  FA_CAUSAL_NONE = 0,
  /* Query i keeps keys j <= i. */
  FA_CAUSAL_TOP_LEFT = 1,
  /* Query i keeps keys j <= i + seq_kv - seq_q (FlashAttention's). */
  FA_CAUSAL_BOTTOM_RIGHT = 2
} fa_causal;

typedef struct fa_library_t *fa_library;
typedef struct fa_attention_plan_t *fa_attention_plan;
typedef struct fa_layer_norm_plan_t *fa_layer_norm_plan;

/* FA_API_VERSION of the library that was loaded. */
int fa_api_version(void);

/* What this thread's last call that returns an fa_status was doing and why
   it failed; "" when it succeeded (every such call clears it first). Valid
   until this thread's next call. */
const char *fa_last_error(void);

/* "FA_ERROR_UNSUPPORTED" etc. */
const char *fa_status_name(fa_status status);

/* Opens the kernel library in `kernel_dir` (its manifest.json and PTX) for
   CUDA device `device_ordinal`, retaining that device's primary context.
   `tuning_cache`: a tuning cache path, NULL for <kernel_dir>/tuning.json if
   present, or "" for none (every group's default kernel). A cache tuned on
   another GPU is ignored. */
fa_status fa_library_open(const char *kernel_dir, int device_ordinal,
                          const char *tuning_cache, fa_library *library);

/* Unloads every kernel and releases the context. NULL is ignored. */
void fa_library_close(fa_library library);

/* ---- Attention ---------------------------------------------------------- */

/* One attention problem: sizes, dtype and variant. Zero-initialise and set
   what applies; the defaults are plain, non-causal attention. */
typedef struct fa_attention_problem {
  fa_dtype dtype;
  int64_t batch;
  int64_t heads;
  int64_t kv_heads; /* Divides heads; == heads for multi-head attention. */
  int64_t seq_q;
  int64_t seq_kv;
  int64_t head_dim;
  fa_causal causal;
  /* Nonzero: query i keeps keys i + off - window_left <= j <=
     i + off + window_right, off = seq_kv - seq_q (both >= 0). */
  int window;
  int64_t window_left;
  int64_t window_right;
  /* > 0: scores become softcap * tanh(s / softcap). */
  float softcap;
  /* Nonzero: the launch passes alibi_slopes (s -= slope * |i + off - j|). */
  int alibi;
  /* Nonzero: the launch passes doc_ids; queries keep keys of their own
     document only (seq_q == seq_kv). */
  int documents;
  /* Nonzero: the launch passes sinks (one logit per head in every row's
     softmax denominator); the backward writes dsinks. */
  int sinks;
  /* In [0, 1): dropout on the attention weights, Philox.h's mask from the
     launch's dropout_seed and dropout_offset. */
  float dropout_p;
} fa_attention_problem;

/* The device tensors and per-call values of a launch. The forward reads q,
   k, v (and the variant's tensors) and writes out and lse; the backward
   reads q, k, v, out, lse, dout (and the variant's) and writes dq, dk, dv
   (and dsinks). Pointers a launch does not use may be 0. */
typedef struct fa_attention_tensors {
  CUdeviceptr q, k, v, out, lse;
  CUdeviceptr dout, dq, dk, dv, dsinks;
  CUdeviceptr alibi_slopes, doc_ids, sinks;
  uint64_t dropout_seed;
  uint32_t dropout_offset;
} fa_attention_tensors;

/* Chooses the kernels for `problem` (the tuning cache's for its sequence
   class on this GPU, else the group's default) and keeps them. Fails with
   FA_ERROR_UNSUPPORTED when the library has no forward kernel for it; a
   problem without backward kernels gets a plan whose backward fails. */
fa_status fa_attention_plan_create(fa_library library,
                                   const fa_attention_problem *problem,
                                   fa_attention_plan *plan);
void fa_attention_plan_destroy(fa_attention_plan plan);

/* The chosen kernels' names (the forward's; the backward's dq kernel, or ""
   when the library has none). Valid while the plan lives. */
const char *fa_attention_plan_forward_kernel(fa_attention_plan plan);
const char *fa_attention_plan_backward_kernel(fa_attention_plan plan);

/* The softmax scale the plan's kernels were compiled with. */
double fa_attention_plan_scale(fa_attention_plan plan);

/* Bytes of workspace fa_attention_forward needs: 0 for most kernels; a
   persistent forward that schedules its tiles dynamically keeps its tile
   counter (an int32) there. */
fa_status fa_attention_forward_workspace_size(fa_attention_plan plan,
                                              size_t *bytes);

/* Bytes of workspace fa_attention_backward needs. Its layout, in byte
   offsets from the workspace's start (the launch carves it; the caller only
   sizes it):
     0      delta: f32 [batch, heads, seq_q], 4 * batch * heads * seq_q bytes.
   and, for a backward whose dK/dV kernel also sums dQ (kernels that take
   dq_accum and dq_semaphores), each part at the next multiple of 256:
     A = round_up(delta bytes, 256)
            dq_accum: f32 [batch, heads, seq_q, head_dim] (partial dQ sums;
            the kernel stores before it adds, so no initialisation).
     S = A + round_up(4 * batch * heads * seq_q * head_dim, 256)
            dq_semaphores: i32 [batch, heads, ceil(seq_q / block_n)], zeroed
            by the launch on `stream` before the dK/dV kernel.
   then the size is S + round_up(semaphore bytes, 256). Otherwise the size is
   delta's alone. */
fa_status fa_attention_backward_workspace_size(fa_attention_plan plan,
                                               size_t *bytes);

/* Launches the forward on `stream`. `workspace` (workspace_bytes long) may
   be 0 when fa_attention_forward_workspace_size says 0; otherwise the launch
   first zeroes the tile counter there on `stream` (the kernel counts from
   zero), so the workspace needs no initialisation. */
fa_status fa_attention_forward(fa_attention_plan plan,
                               const fa_attention_tensors *tensors,
                               CUdeviceptr workspace, size_t workspace_bytes,
                               CUstream stream);

/* Launches the backward's kernels in order on `stream`. Deterministic: two
   runs on the same inputs give bitwise-identical gradients. */
fa_status fa_attention_backward(fa_attention_plan plan,
                                const fa_attention_tensors *tensors,
                                CUdeviceptr workspace, size_t workspace_bytes,
                                CUstream stream);

/* ---- LayerNorm ---------------------------------------------------------- */

/* Chooses the forward and backward kernels for rows of `cols` elements of
   `dtype` (`rows` rows). */
fa_status fa_layer_norm_plan_create(fa_library library, fa_dtype dtype,
                                    int64_t rows, int64_t cols,
                                    fa_layer_norm_plan *plan);
void fa_layer_norm_plan_destroy(fa_layer_norm_plan plan);

/* y = (x - mean) * rstd * weight + bias, rstd = 1 / sqrt(var + eps) (biased
   variance; eps positive, finite in f32). */
fa_status fa_layer_norm_forward(fa_layer_norm_plan plan, CUdeviceptr x,
                                CUdeviceptr weight, CUdeviceptr bias,
                                CUdeviceptr y, CUdeviceptr mean,
                                CUdeviceptr rstd, double eps, CUstream stream);

/* Bytes of workspace fa_layer_norm_backward needs (f32 partial sums). */
fa_status fa_layer_norm_backward_workspace_size(fa_layer_norm_plan plan,
                                                size_t *bytes);

/* dx, dweight and dbias (f32) from the forward's x, weight, mean and rstd and
   the incoming dy. Writes every element of its outputs. */
fa_status fa_layer_norm_backward(fa_layer_norm_plan plan, CUdeviceptr x,
                                 CUdeviceptr weight, CUdeviceptr mean,
                                 CUdeviceptr rstd, CUdeviceptr dy,
                                 CUdeviceptr dx, CUdeviceptr dweight,
                                 CUdeviceptr dbias, CUdeviceptr workspace,
                                 size_t workspace_bytes, CUstream stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FA_RUNTIME_FA_H */
