//===- Passes.td - Transformations of the fa dialect --------*- tablegen -*-===//

#ifndef FA_DIALECT_FA_TRANSFORMS_PASSES_TD
#define FA_DIALECT_FA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FAExpandAttentionVariants : Pass<"fa-expand-attention-variants"> {
  let summary = "Rewrite the named attention variants into mask and score regions";
  let description = [{
    The named variants of `fa.attention` and `fa.attention_grad`
    (`causal_bottom_right`, `window`, `document`, `softcap`, `alibi`) are
    sugar: this pass rewrites each op's variants into its `mask` and `score`
    regions, so that one path (the regions) compiles them all. Each variant's
    operands become captures (read by the regions as block arguments, hence
    kernel parameters: one kernel serves every window, cap or table), and
    `seq_kv - seq_q`, the bottom-right offset, becomes one more capture when
    a variant needs it (a constant when both lengths are static). Mask
    conditions are `and`-ed; the score applies softcap, then ALiBi. `causal`
    (top-left) stays an attribute, which the tiling compiles directly, unless
    `expand-causal` is set. `sinks` is not a region and stays.
  }];
  let options = [
    Option<"expandCausal", "expand-causal", "bool", /*default=*/"false",
           "Also rewrite `causal` (top-left) into the mask region">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect"];
}

def FATileAttention : Pass<"fa-tile-attention", "ModuleOp"> {
  let summary = "Turn each fa.attention function into a tiled GPU kernel";
  let description = [{
    Rewrites every `func.func` whose body is one `fa.attention` on its
    arguments into a `gpu.func` kernel (in a `gpu.module` of the same name)
    with the grid mapping explicit: block `(x, y)` owns query tile `x` of
    `(batch, head) = divmod(y, heads)`. The key/value sweep becomes `scf.for`
    loops over `block-n`-key tiles whose bodies are tile-level `fa` ops.

    The softmax is the numerically safe three-phase form (a loop for the row
    maximum, one for the row sum, one for the weighted values), every score
    tile masked; `--fa-fuse-online-softmax` and `--fa-eliminate-causal-tiles`
    then make it fast. Kernel metadata (grid, block, configuration) is
    recorded in the `fa.kernels` attribute of the module for the manifest.

    The configuration: the options, overridden by the function's `fa.tile`;
    a function without one, when no tile option was given, takes the `chip`'s
    entry of DefaultTiles.def (the kernel library's default for its group).
    Every size is checked against what the lowering handles and the chip's
    shared memory.
  }];
  let options = [
    Option<"blockM", "block-m", "int64_t", /*default=*/"64",
           "Query rows per thread block (16 or 32 per warp)">,
    Option<"blockN", "block-n", "int64_t", /*default=*/"64",
           "Keys per key/value tile">,
    Option<"numWarps", "num-warps", "int64_t", /*default=*/"4",
           "Warps per thread block">,
    Option<"numStages", "num-stages", "int64_t", /*default=*/"1",
           "Shared-memory slots per K and V tile: 1, or 2 (double "
           "buffering, applied by fa-pipeline-kv-copies)">,
    Option<"chip", "chip", "std::string", /*default=*/"\"\"",
           "The GPU the kernels are for (fa-to-ptx passes its chip): a "
           "function without fa.tile, when no tile option is given, gets "
           "its default configuration (DefaultTiles.def), and the shared "
           "tiles must fit its static shared memory; empty: no particular "
           "chip (generic defaults, the largest shared memory of any)">,
  ];
  let dependentDialects = ["::mlir::fa::FADialect",
                           "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::memref::MemRefDialect"];
}

def FATileAttentionGrad : Pass<"fa-tile-attention-grad", "ModuleOp"> {
  let summary = "Turn each fa.attention_grad function into three tiled GPU kernels";
  let description = [{
    Rewrites every `func.func` whose body is one `fa.attention_grad` on its
    arguments into three kernels on the forward's tile ops (each in a
    `gpu.module` of its own), P recomputed from the forward's log-sum-exp:

    - `<name>_delta`: `delta = rowsum(dout * out)` per query row;
    - `<name>_dkdv`: one key tile per block (grid: key tiles x batch *
      kv_heads); a loop over the query heads that share the kv head and,
      inside, over their query tiles computes the transposed scores
      `S^T = K Q^T` (mask `transposed`), `P^T`, `dV += P^T dO`,
      `dP^T = V dO^T`, `dS^T = P^T (dP^T - delta)`, `dK += dS^T Q`; under a
      causal mask the query tiles before the key tile are skipped. GQA sums
      come from the loop: no atomics.
    - `<name>`: one query tile per block: `S = Q K^T`, `P`, `dP = dO V^T`,
      `dS = P (dP - delta)`, `dQ += dS K`; causal key tiles after the
      diagonal are skipped.

    Tile sizes: the options, overridden by the function's `fa.tile`
    (`block_m`: rows of each kernel's tiles, queries or keys; `block_n`: the
    tiles its loop walks; `num_warps`; `num_stages`). The dQ kernel takes
    `dq_block_m`, `dq_block_n` and `dq_num_warps` where given (it holds one
    accumulator where the dK/dV kernel holds two, so it affords larger
    tiles). A function without `fa.tile`, when no tile option was given,
    takes the `chip`'s entry of DefaultTiles.def. All operand tiles are
    staged in shared memory; the loops are
    marked `fa.copy_loop`, so that with `num_stages = 2` fa-pipeline-kv-copies
    loads the next iteration's tiles during this one. Kernel metadata (including the companions' names on the
    dq kernel) goes to the module's `fa.kernels`.
  }];
  let options = [
    Option<"blockM", "block-m", "int64_t", /*default=*/"64",
           "Rows of each kernel's tiles (16 or 32 per warp)">,
    Option<"blockN", "block-n", "int64_t", /*default=*/"64",
           "Length of the tiles each kernel's loop walks">,
    Option<"numWarps", "num-warps", "int64_t", /*default=*/"4",
           "Warps per thread block">,
    Option<"numStages", "num-stages", "int64_t", /*default=*/"2",
           "Buffers per tile the loops copy into: 2 lets "
           "fa-pipeline-kv-copies load the next tiles during this "
           "iteration, 1 keeps the copies synchronous">,
    Option<"fuseDq", "fuse-dq", "bool", /*default=*/"false",
           "Compute dQ in the dK/dV kernel where it can (head_dim 128 on "
           "two warpgroups of wgmma, no mask region): ordered f32 adds into "
           "a dq_accum workspace, and an attention_bwd kernel that only "
           "converts; in a warp-specialised dK/dV kernel two writer warps "
           "take the turns and add by TMA (fa-warp-specialize). A "
           "function's fa.tile fuse_dq = true asks for it for that function "
           "alone (an error where it cannot). Off by "
           "default: deterministic, it is 1.13-1.26x the three kernels "
           "above N=1024 and 0.98-1.06x up to it (H100, D=128, fa-run "
           "tune's classes, bench/results/2026-12-07-bwd-p-registers), so "
           "the kernel library "
           "has it as a candidate for fa-run tune">,
    Option<"chip", "chip", "std::string", /*default=*/"\"\"",
           "The GPU the kernels are for (fa-to-ptx passes its chip): a "
           "function without fa.tile, when no tile option is given, gets "
           "its default configuration (DefaultTiles.def), and each kernel's "
           "shared tiles must fit its static shared memory; empty: no "
           "particular chip (generic defaults, the largest shared memory of "
           "any)">,
  ];
  let dependentDialects = ["::mlir::fa::FADialect",
                           "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::memref::MemRefDialect"];
}

def FATileLayerNorm : Pass<"fa-tile-layernorm", "ModuleOp"> {
  let summary = "Turn each fa.layernorm(_grad) function into row-wise GPU kernels";
  let description = [{
    Rewrites every `func.func` whose body is one `fa.layernorm` or
    `fa.layernorm_grad` on its arguments (2-D `x`: rows x cols) into
    kernels on blocks of rows (`fa.load_block`, row reductions,
    `fa.store_block`), each in a `gpu.module` of its own; the distribution
    over threads is left to `--convert-fa-rows-to-gpu`.

    Forward: block `i` normalises rows `[i R, (i + 1) R)`: the mean, then the
    variance as the mean of `(x - mean)^2` (two passes, not `E[x^2] -
    mean^2`, which cancels badly), statistics in f32. With `resident = true`
    the row is read once and kept in registers (the kernel then requires
    cols <= block_cols); otherwise every pass loops over column blocks and
    rows may have any length. `eps`, an f32 argument, becomes the kernel's
    last parameter (manifest kind `f32`): one kernel serves every eps. The
    backward needs none: it reads the saved `rstd`.

    Backward: `dx = rstd (g - mean(g) - xhat mean(g xhat))` with `g = dy w`
    and `xhat = (x - mean) rstd`, one pass over the row when resident. The
    grid is persistent: block `i` takes row blocks `i, i + grid, ...` and
    sums `dy xhat` and `dy` per column over them into its own rows of two f32
    workspaces `partial_dweight`, `partial_dbias` (`[grid R, cols]`, extra
    kernel parameters). A second kernel, `<name>_params`, sums those partial
    rows into `dweight` and `dbias`: a two-stage reduction, without atomics
    or locks.

    The configuration comes from the pass options, overridden per function
    by its `fa.rows` (`#fa.rows<rows = 1, block_cols = 1024, num_warps =
    4, resident = true>`; the reduction kernel's `reduce_rows`, `reduce_cols`,
    `reduce_warps`).
  }];
  let options = [
    Option<"rows", "rows", "int64_t", /*default=*/"1",
           "Rows per block of rows (1 per thread block; or one per warp)">,
    Option<"blockCols", "block-cols", "int64_t", /*default=*/"1024",
           "Columns per block of rows">,
    Option<"numWarps", "num-warps", "int64_t", /*default=*/"4",
           "Warps per thread block">,
    Option<"resident", "resident", "bool", /*default=*/"false",
           "Keep the whole row in registers (requires cols <= block-cols)">,
  ];
  let dependentDialects = ["::mlir::fa::FADialect",
                           "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::memref::MemRefDialect"];
}

def FAFuseOnlineSoftmax : Pass<"fa-fuse-online-softmax"> {
  let summary = "Fuse the three softmax phases into one online-softmax loop";
  let description = [{
    Replaces the max / sum / accumulate loops of a tiled attention kernel by
    one loop that carries the running row maximum `m`, the running row sum
    `l` and the unnormalised accumulator, rescaling both by
    `exp2(m_old - m_new)` when the maximum grows. `log2(e)` is folded into
    the score scale so the loop uses `exp2`; the output is normalised once,
    after the loop, and the log-sum-exp follows from `m` and `l`.
  }];
  let dependentDialects = ["::mlir::fa::FADialect",
                           "::mlir::math::MathDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def FAEliminateCausalTiles : Pass<"fa-eliminate-causal-tiles"> {
  let summary = "Skip fully masked key tiles and drop the mask where it is a no-op";
  let description = [{
    Classifies the key tiles of every masked key/value loop as empty (every
    element masked), full (none masked) or partial, from the query rows of
    the block, the causal flag and the key length. The loop then stops after
    the last non-empty tile (the diagonal, for causal attention), and is split
    in two: the full tiles without any mask, then the partial tiles (the
    diagonal and the sequence tail) with it.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def FAOverlapSoftmax : Pass<"fa-overlap-softmax"> {
  let summary = "Run each key tile's softmax during the previous tile's P @ V";
  let description = [{
    For kernels whose `fa.tile` says `overlap_softmax = true` (with `wgmma = true`
    and `num_stages = 2`): FlashAttention-3's intra-warpgroup pipelining.
    Warpgroup MMAs are issued and waited for separately, but in the online
    loop every step needs the one before. This pass moves each tile's
    P @ V into the next iteration, issued right after that iteration's
    scores, so it runs while the warps exponentiate them:

        prologue (lb < ub):    copy K[lb]; wait; copy K[lb+1], V[lb]
                               S = Q K[lb]^T; softmax -> m, l, acc, P
        loop j in [lb+1, ub):  wait; copy K[j+1] (if any), V[j]
                               issue S = Q K[j]^T; issue acc += P V[j-1]
                               softmax of S; acc * alpha
        epilogue (lb < ub):    wait; acc += P V[ub-1]

    The loop carries P as well. K and V get two slots each (`[2][R][C]`,
    slot j % 2); each copy starts one iteration before its tile is read,
    and the wait's barrier frees the slots it overwrites. The loops are
    marked `fa.pipelined`; fa-pipeline-kv-copies leaves them.
  }];
  let dependentDialects = ["::mlir::fa::FADialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def FAWarpSpecialize : Pass<"fa-warp-specialize"> {
  let summary = "Split a forward or dK/dV kernel into a producer warp and "
                "computing warpgroups";
  let description = [{
    For every kernel whose `fa.tile` has `warp_specialize = true` (Hopper
    attention forward, wgmma, pipelined K/V copies in two slots each), after
    fa-pipeline-kv-copies: the K and V tiles stop being copied by every warp
    (`fa.copy_tile_async` plus a block-wide `fa.wait_tiles` per key tile) and
    come through two TMA rings (`fa.ring_*`, FAAsyncOps.td) instead. The
    block gains a producer warpgroup (128 more threads, after the computing
    ones, so their thread ids stay 0 to 32 * num_warps - 1):

        ring_create K, V          (every thread)
        if thread >= 32 * num_warps:             producer warpgroup
          setmaxnreg.dec 24
          if thread == 32 * num_warps:
            for j in [0, key tiles): ring_produce K[j], V[j] (TMA)
        else:                                    computing warpgroups
          setmaxnreg.inc 240
          copy Q; wait (a named barrier of the computing threads)
          ... the kernel as before, each read of slot j % 2 of K or V
              a ring_consume of tile j, and a ring_release of it (the first
              lane of each warp) after the product reading it completed ...

    The kernel takes two more parameters, `k_tma` and `v_tma`: tensor maps
    of k and v with a box of one head's `block_n` rows by 128 bytes and the
    128-byte swizzle, which the runtime encodes from k and v (the manifest's
    "tensor" of a tensormap parameter). TMA writes each slot as the panels
    the wgmma operands read (FAAsyncOps.td), so the products are unchanged.
    The kernel records `fa.producer_threads` for convert-fa-to-nvgpu, which
    lowers the computing warpgroups' barriers to a named barrier of their
    threads alone.

    With `ping_pong = true` (two computing warpgroups) the warpgroups take
    turns issuing their products in each key loop, FlashAttention-3's
    ping-pong: warpgroup w waits on named barrier 2 + w before its first
    product of an iteration and arrives on the other's after its last, so
    one warpgroup's softmax runs while the other's products hold the tensor
    cores.

    With `persistent = true` the grid becomes `[persistent_query_tiles, one,
    one]` (the runtime launches min(tiles, resident blocks)) and both roles
    loop over the tiles of the grid `[query_tiles, batch_heads]`. Without a
    mask tile t = block_id.x, + grid_dim.x, ...: t % query_tiles the query
    tile, t / query_tiles the (batch, head). Causal kernels take tiles
    dynamically: a new parameter `tile_counter` (memref<1xi32>, zeroed by
    the runtime before each launch) gives tile grid_dim.x + its old value
    to each atomic add of the producer, which publishes the next tile in a
    two-slot workgroup buffer before loading the current query tile; tiles
    are numbered in groups of ceil(2 grid / query_tiles) rows, query tile
    first. Each role computes the tile's indices from t, and numbers the
    K/V rings' tiles on across its query tiles. The query tile comes by TMA too (a third
    parameter, `q_tma`): a one-slot ring over a buffer of its own, filled by
    the producer for the block's next tile once the computing warpgroups
    released the current one before their epilogue (the old query buffer
    only stages the output). The producer keeps 40 registers (its tile loop
    spills at 24, with strided views' strides at 32), the computing
    warpgroups 232.

    The backward's dK/dV kernel (`warp_specialize = true` in the backward's
    fa.tile applies to it alone; wgmma, two computing warpgroups, two
    stages) is split the same way around its query loop: each of the
    producer's four warps walks the computing side's loop nest (the group's
    query heads, then the query tiles, same bounds) for one ring, Q and dO
    by TMA (the warp's first lane; parameters `q_tma`, `dout_tma`), the
    tile's lse and delta rows by cp.async (every lane,
    `fa.ring_produce_rows`: rows of any length, which no tensor map
    describes). setmaxnreg gives the producer 24 registers and the computing
    warpgroups 240; the kernel's head and block divisions and both sides'
    loop counters become 32-bit, without which 128 keys x 64 queries at
    head_dim 128 spilled on one side or the other. Query tile j of the
    group's head h is ring iteration h * n + (j - first), n the query loop's
    trip count. Both products reading a slot must complete before it goes
    back, and the accumulating one (dK += dS^T Q, dV += P^T dO) is waited
    for at the loop's yield, so the computing warps release a tile's slots
    at the start of the next iteration, and the last tile's after the loop.
    The computing side copies K and V itself, as before.

    A dK/dV kernel that also computes dQ (fa-tile-attention-grad fuse-dq)
    hands each query tile's dQ^T to two writer warps, FlashAttention-3's dQ
    writer, which take the tiles in turn (ring iteration i is writer i mod
    2's; Q and dO then share a walker, lse and delta another): the
    computing warpgroups wait until the previous tile's writer has freed the
    staging buffer (a new workgroup buffer, block_n rows of head_dim f32
    in 128-byte-swizzled panels, 1024-byte aligned; named barrier 5 + 2 w
    of 288 threads), store dQ^T there transposed (`fa.stage_accumulator
    swizzled`), fence for the async proxy and arrive on the tile's writer's
    barrier 4 + 2 w. Writer w, on its tiles, waits there, takes the block's
    turn on the tile (`fa.ordered_wait warp`), adds the tile into dq_accum
    by TMA through dq_accum's tensor map (a new parameter `dq_accum_tma`;
    `fa.accumulate_boxes_async`: a tensor reduce-add per panel, tensor
    stores for the first block), frees the buffer as soon
    as TMA has read it, and passes the turn on once the adds are done
    (`fa.wait_bulk_async`, `fa.ordered_signal warp`, whose release is a
    MEMBAR.ALL.GPU that outlasted a tile's products: two writers hide it).
    The producer keeps 40 registers and the computing warpgroups 232.

    Only forwards with `overlap_softmax = true` (whose every product is
    waited for inside its iteration) and dK/dV kernels, plain or causal,
    without mask or score regions, are split today; other kernels asking
    for it are refused, naming what is missing. The pass rewrites the kernels' entries in the module's
    `fa.kernels`, so it runs on the module, never nested on the gpu.modules
    (in parallel, their updates of the one attribute would race).
  }];
  let dependentDialects = ["::mlir::fa::FADialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::nvgpu::NVGPUDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::scf::SCFDialect"];
}

def FAPipelineKvCopies : Pass<"fa-pipeline-kv-copies"> {
  let summary = "Overlap the key/value tile copies with the tensor-core work";
  let description = [{
    In every online-softmax key loop, replaces the synchronous copies
    (`fa.stage_tile`: barrier, copy, barrier) by asynchronous ones
    (`fa.copy_tile_async`, `cp.async` with zero fill) issued one step ahead:
    V's tile is fetched while the scores of the same tile are computed and
    exponentiated, and the next K tile while P @ V runs. Each iteration waits
    twice (`fa.wait_tiles`) instead of synchronising four times:

        prologue: copy K[lb]
        loop j:   wait; copy V[j]; S = Q K[j]^T; softmax
                  wait; copy K[j+1]; acc += P V[j]
        epilogue: wait

    A wait also orders the buffer reuse: every warp has finished reading a
    buffer before the next copy into it starts.

    With `num_stages = 2` in the kernel's `fa.tile`, the K and V buffers get
    two slots each (`[2][R][C]`, read through `memref.subview` of slot
    `j % 2`), and both tiles of the next iteration load during all of this
    one:

        prologue: copy K[lb], V[lb] into slot lb % 2
        loop j:   wait; copy K[j+1], V[j+1] into slot (j+1) % 2
                  S = Q K[j]^T; softmax; acc += P V[j]   (slot j % 2)
        epilogue: wait

    The wait's barrier at the top of iteration j also guarantees every warp
    is done with iteration j - 1, whose slot the new copies overwrite. A
    kernel with `pipeline_copies = false` keeps its synchronous copies.
  }];
  // Multi-buffered tiles are read through memref.subview slots.
  let dependentDialects = ["::mlir::fa::FADialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def FAExportKernels : Pass<"fa-export-kernels", "ModuleOp"> {
  let summary = "Write the PTX of each compiled kernel and a manifest";
  let description = [{
    After `gpu-module-to-binary{format=isa}`, writes `<dir>/<kernel>.ptx` for
    every `gpu.binary` and `<dir>/manifest.json` describing each kernel
    (parameters, launch grid, block, configuration) from the module's
    `fa.kernels` attribute, for the runtime to load.
  }];
  let options = [
    Option<"outputDir", "dir", "std::string", /*default=*/"\".\"",
           "Directory the PTX files and manifest.json are written to">,
  ];
}

#endif // FA_DIALECT_FA_TRANSFORMS_PASSES_TD
