//===- FAAsyncOps.td - Asynchronous tile pipelines ----------*- tablegen -*-===//
//
// Hopper's asynchronous pipelines at the tile level: a ring of S shared-memory
// slots that the Tensor Memory Accelerator (TMA) fills, each guarded by two
// mbarriers, `full` (the slot's bytes have landed) and `empty` (every
// consumer is done with the slot). A producer walks the iterations 0, 1, 2...
// with `fa.ring_produce`, consumers follow with `fa.ring_consume` and
// `fa.ring_release`; iteration `i` uses slot `i mod S` in its round `i / S`,
// and the parity of that round is what each wait checks (the mbarrier's
// phase bit flips once per round). Nothing but the iteration number is
// carried: every phase is explicit in the IR that lowers these ops.
//
// The tiles come through tensor maps (`!nvgpu.tensormap.descriptor`, encoded
// on the host by cuTensorMapEncodeTiled and passed to the kernel by value as
// a 128-byte __grid_constant__ parameter); rows beyond the tensor's end
// arrive as zeros (the descriptor's `oob = zero`), so a sequence's tail needs
// no predicated copy. A map may be of rank 2 to 5 (e.g. [batch, heads, seq,
// head_dim]) with a box of 1 in all but its last two dimensions.
//
// Panels: a swizzled box row is exactly one swizzle span (128 bytes for
// swizzle_128b: 64 bf16 columns). A tile whose row is k spans wide is
// stored as k consecutive panels, panel p holding columns
// [p W, p W + W) of every row (W = the box's columns), [R, W] row-major and
// swizzled, at byte p * R * span of the slot; `fa.ring_produce` fills them
// with k loads. This is the layout wgmma reads for rows wider than 128
// bytes (TileLayout.cpp); each panel starts where the swizzle's 8-row
// pattern does (1024-byte aligned for swizzle_128b).
//
// Row rings: a ring whose slot is 1-D, `R` f32 values (per-query-tile
// statistics such as the log-sum-exp, `[batch, heads, seq]` with any `seq`),
// which TMA cannot describe (a tensor map needs 16-byte global strides).
// One warp fills a slot with `fa.ring_produce_rows`: 4-byte cp.async per
// value, each lane's copies tracked by `full[s]` through
// `cp.async.mbarrier.arrive.noinc`. Consumers use the same
// `fa.ring_consume` / `fa.ring_release`.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FA_IR_FAASYNCOPS_TD
#define FA_DIALECT_FA_IR_FAASYNCOPS_TD

include "fa/Dialect/FA/IR/FADialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"

def FA_RingType : TypeDef<FA_Dialect, "Ring"> {
  let mnemonic = "ring";
  let summary = "a ring of shared-memory slots filled by TMA, with mbarriers";
  let description = [{
    `!fa.ring<S, memref<R x C x T, #gpu.address_space<workgroup>>>`: `S`
    slots of one tile type in shared memory, with a `full` and an `empty`
    mbarrier per slot. Created once per kernel by `fa.ring_create`.
    The tile is 2-D, of f16, bf16 or f32, in the workgroup address space,
    a whole number of 128 bytes (each slot stays 128-byte aligned for TMA),
    and the `S` slots fit in the 227 KiB of shared memory a Hopper block may
    use. Whether a slot is row-major or swizzled panels is the tensor map's
    (`fa.ring_produce`): the ring's consumers must read it accordingly.

    A row ring, `!fa.ring<S, memref<R x f32, #gpu.address_space<workgroup>>>`,
    has a 1-D tile of `R` f32 values, `R` a multiple of 32 (one value per
    lane of the producing warp per step) and at most 256; one warp fills
    it by cp.async (`fa.ring_produce_rows`), not TMA.
  }];
  let parameters = (ins "int64_t":$stages, "MemRefType":$tile);
  let assemblyFormat = "`<` $stages `,` $tile `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Bytes of one slot: what TMA delivers into it (out-of-bounds rows,
    /// zero-filled, count too), so each `full` barrier expects this many.
    int64_t getTileBytes() const;
    /// The type of one slot of the ring's buffer (a subview of it).
    MemRefType getSlotType() const;
    /// Whether the tile is a 1-D row of f32 (filled by
    /// `fa.ring_produce_rows`) rather than a 2-D TMA tile.
    bool isRowRing() const { return getTile().getRank() == 1; }
  }];
}

def FA_TensorMap : Type<
    CPred<"::llvm::isa<::mlir::nvgpu::TensorMapDescriptorType>($_self)">,
    "a TMA tensor map (!nvgpu.tensormap.descriptor)",
    "::mlir::nvgpu::TensorMapDescriptorType">;
// Rank 3 / 2 for tile rings, rank 2 / 1 for row rings (RingType checks
// which the ring is).
def FA_RingBuffers : MemRefRankOf<[F16, BF16, F32], [2, 3]>;
def FA_RingSlot : MemRefRankOf<[F16, BF16, F32], [1, 2]>;

def FA_RingCreateOp : FA_Op<"ring_create"> {
  let summary = "a TMA ring over shared buffers, with its mbarriers initialised";
  let description = [{
    Every thread of the block executes it. `buffers` (`[S, R, C]`, shared,
    row-major) holds the `S` slots. TMA writes 128-byte-aligned addresses,
    and a swizzled slot must start where the swizzle's pattern does (8
    spans: 1024 bytes for swizzle_128b, 512 for 64b, 256 for 32b): a
    workgroup attribution needs `llvm.align` of the largest that any
    `fa.ring_produce` of the ring needs, which convert-fa-to-nvgpu checks. Thread 0 initialises the `2 S`
    mbarriers, `full[s]` for one arrival (the producer's `expect_tx`; a row
    ring's for 32, one `cp.async.mbarrier.arrive.noinc` per lane of the
    producing warp) and `empty[s]` for `consumers` arrivals (one per thread
    that runs `fa.ring_release`); then the block synchronises, so no thread
    waits on a barrier before it exists. A row ring's buffers are `[S, R]`;
    its 4-byte copies need no alignment beyond the f32 elements' (a reader
    with wider loads, such as `fa.column_broadcast_shared`'s 8-byte pairs,
    needs the buffers aligned for those: the kernels' attributions carry
    `llvm.align`).

    ```mlir
    %ring = fa.ring_create %buffers consumers(128)
        : memref<3x64x64xbf16, #gpu.address_space<workgroup>>
        -> !fa.ring<3, memref<64x64xbf16, #gpu.address_space<workgroup>>>
    ```
  }];
  let arguments = (ins Arg<FA_RingBuffers, "", [MemWrite]>:$buffers,
                       ConfinedAttr<I64Attr, [IntPositive]>:$consumers);
  let results = (outs FA_RingType:$ring);
  let assemblyFormat = [{
    $buffers `consumers` `(` $consumers `)` attr-dict `:` type($buffers) `->`
    qualified(type($ring))
  }];
  let hasVerifier = 1;
}

def FA_RingProduceOp : FA_Op<"ring_produce"> {
  let summary = "fills the slot of an iteration with TMA tile loads";
  let description = [{
    Run by one thread (the caller guards it: the producer warp's elected
    lane), on a ring of 2-D tiles (a row ring is `fa.ring_produce_rows`'s).
    For iteration `i`, slot `s = i mod S`: waits until `empty[s]` has
    completed round `i / S - 1` (its parity `(i / S + 1) mod 2`; in round 0
    the wait passes at once, as a fresh mbarrier counts its phase "-1" as
    complete), announces the whole slot's bytes on `full[s]` (one
    `mbarrier.arrive.expect_tx`) and starts the TMA loads of the slot, all
    completing on `full[s]`. The coordinates, one per dimension of the
    descriptor, index the tensor in its own dimension order (outermost
    first, as memref indices; the last two are the tile's first row and
    column); elements of a box outside the tensor arrive as zeros.

    The descriptor's box is `[1, ..., 1, R, W]` (rank 2 to 5) for the
    ring's tile `[R, C]`, of its element type, each dimension at most 256
    elements and the row a whole number of 16 bytes:
    - `swizzle = none`: `W = C`; one load fills the slot row-major.
    - swizzled: `W` elements are exactly the swizzle's span (32, 64 or 128
      bytes), `C = k W`, and `R` is a multiple of 8 (a panel is a whole
      number of the swizzle's 8-row pattern). The slot holds `k` panels:
      load `p` (0 <= p < k) reads the box at the innermost coordinate plus
      `p W` into the `[R, W]` panel at byte `p * R * span` of the slot.
      With swizzle_128b, bf16 and `C = 128` (head_dim 128): 2 loads of
      `[R, 64]`, the second at byte `R * 128`.

    ```mlir
    // K of head %h of batch %b: a [64, 128] bf16 tile in two 128-byte panels.
    fa.ring_produce %ring[%i] from %k_map[%b, %h, %row, %c0]
        : !fa.ring<2, memref<64x128xbf16, #gpu.address_space<workgroup>>>,
          !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x64xbf16, #gpu.address_space<workgroup>>,
                                      swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
    ```
  }];
  let arguments = (ins FA_RingType:$ring, Index:$iteration,
                       FA_TensorMap:$descriptor, Variadic<Index>:$coordinates);
  let assemblyFormat = [{
    $ring `[` $iteration `]` `from` $descriptor `[` $coordinates `]` attr-dict
    `:` qualified(type($ring)) `,` qualified(type($descriptor))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Loads (panels) that fill a slot: the tile's columns over the box's.
    int64_t getPanelCount();
    /// Bytes the ring's buffers must be aligned to for this load: TMA's 128,
    /// or the swizzle's 8-row pattern (1024 bytes for swizzle_128b).
    int64_t getSharedAlignment();
  }];
}

def FA_RingProduceRowsOp : FA_Op<"ring_produce_rows"> {
  let summary = "fills the slot of an iteration of a row ring by one warp's cp.async";
  let description = [{
    Run by all 32 lanes of one warp, uniformly (the caller guards it to one
    warp), on a row ring of `R` f32 values. For iteration `i`, slot
    `s = i mod S`: every lane waits until `empty[s]` has completed round
    `i / S - 1` (as `fa.ring_produce` does), then lane `l` copies
    `source[batch, head, row + e]` into element `e` of the slot for
    `e = l, l + 32, ...` with a 4-byte `cp.async.ca` (positions with
    `row + e >= seq`, `seq` the source's dimension 2, arrive as zeros), and
    makes `full[s]` track its copies (`cp.async.mbarrier.arrive.noinc`): the
    slot is full once every lane's copies have landed. `source` is a
    `[batch, heads, seq]` f32 buffer of any layout.

    ```mlir
    // The log-sum-exp of the 64 queries from %row of head %h of batch %b.
    fa.ring_produce_rows %ring[%i] from %lse[%b, %h, %row]
        : !fa.ring<2, memref<64xf32, #gpu.address_space<workgroup>>>,
          memref<?x?x?xf32>
    ```
  }];
  // No declared effects (as fa.ring_produce): it also writes the slot and
  // arrives on a barrier, which `ring` (no memref) cannot say; with only
  // the source's read declared, the op would be dead to the canonicalizer.
  let arguments = (ins FA_RingType:$ring, Index:$iteration,
                       AnyMemRef:$source, Index:$batch, Index:$head,
                       Index:$row);
  let assemblyFormat = [{
    $ring `[` $iteration `]` `from` $source `[` $batch `,` $head `,` $row `]`
    attr-dict `:` qualified(type($ring)) `,` type($source)
  }];
  let hasVerifier = 1;
}

def FA_RingConsumeOp : FA_Op<"ring_consume"> {
  let summary = "waits for the slot of an iteration and returns it";
  let description = [{
    Run by every consumer thread. For iteration `i`, slot `s = i mod S`:
    waits until `full[s]` completes round `i / S` (parity `(i / S) mod 2`):
    the slot's TMA load (a row ring: every lane's cp.async) has landed and
    is visible to the thread. The result is the slot (a `[R, C]` view of the
    ring's buffer, `[R]` for a row ring) until the thread's
    `fa.ring_release` of the same iteration. Its bytes are laid out as the
    producer's descriptor says: row-major without swizzle, else swizzled
    panels (see `fa.ring_produce`); the view's strides describe only the
    former.

    ```mlir
    %k = fa.ring_consume %ring[%i]
        : !fa.ring<3, memref<64x64xbf16, #gpu.address_space<workgroup>>>
        -> memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
    ```
  }];
  let arguments = (ins FA_RingType:$ring, Index:$iteration);
  let results = (outs FA_RingSlot:$slot);
  let assemblyFormat = [{
    $ring `[` $iteration `]` attr-dict `:` qualified(type($ring)) `->`
    type($slot)
  }];
  let hasVerifier = 1;
}

def FA_RingReleaseOp : FA_Op<"ring_release"> {
  let summary = "gives the slot of an iteration back to the producer";
  let description = [{
    Run by every consumer thread after its last read of the slot of
    iteration `i`: one arrival on `empty[i mod S]`. When all `consumers`
    arrivals of `fa.ring_create` are in, the producer may refill the slot.
  }];
  let arguments = (ins FA_RingType:$ring, Index:$iteration);
  let assemblyFormat = [{
    $ring `[` $iteration `]` attr-dict `:` qualified(type($ring))
  }];
}

//===----------------------------------------------------------------------===//
// Ordered accumulation into global memory
//
// Several blocks add their partial tiles into one f32 workspace tile (the
// backward's dQ, one partial per key tile), and the sum must not depend on
// which block got there first: the blocks take turns through an i32 counter
// per (batch, head, tile) in global memory, each waiting until the counter
// says it is its turn (`fa.ordered_wait`), adding (`fa.accumulate_tile`),
// then passing the turn on (`fa.ordered_signal`). FlashAttention-3's
// deterministic backward and CUTLASS's generic barrier work this way. The
// counters start at 0 (the host zeroes them) and end at the number of
// contributors.
//
// `fa.ordered_wait` and `fa.ordered_signal` are collective: every thread of
// the block reaches them, in uniform control flow, since each holds a block
// barrier (in a warp-specialised kernel, the computing branch's barrier, of
// the computing threads; never in the producer branch), or with `warp` one
// warp's (a dQ writer warp, which may be in the producer branch).
// `fa.accumulate_tile` is collective as the tile is: every thread adds its
// own elements.
//
// A warp-specialised kernel hands its tiles to such a writer warp instead:
// the computing warpgroups stage the tile in shared memory
// (`fa.stage_accumulator swizzled`) and the writer adds it by TMA tensor
// reductions (`fa.accumulate_boxes_async`), taking the turns for them,
// while the computing warpgroups go on.
// Deadlock freedom is the caller's: a block may only wait for blocks that
// progress without it.
//===----------------------------------------------------------------------===//

def FA_AccumWorkspace : MemRefRankOf<[F32], [4]>;
def FA_OrderCounters : MemRefRankOf<[I32], [3]>;

def FA_AccumulateTileOp : FA_Op<"accumulate_tile"> {
  let summary = "adds a register tile into an f32 workspace in global memory";
  let description = [{
    `accum[batch, head, row + i, j] += value[i, j]` for the `R x D` tile
    (`D` the workspace's head_dim): every element one atomic add
    (`red.global.add.f32`, or `red.global.add.v2.f32` for a lane's two
    adjacent columns where the chip has vector reductions: sm_90 and PTX
    8.1 on). With `transposed` the tile is `D x R`, head_dim down, rows
    across (the backward's `dQ^T`): `accum[batch, head, row + j, i] +=
    value[i, j]`. Rows (sequence positions) at or beyond `accum`'s dimension
    2 are skipped.

    With `overwrite(%first)`, where `%first` is true the values are stored
    (plain `st.global`) instead of added: the first contributor in the fixed
    order writes, so the workspace needs no zeroing. `%first` must be the
    same for every thread of the block.

    The adds of one call touch every element once; that blocks' adds into
    the same tile happen in a fixed order is `fa.ordered_wait` /
    `fa.ordered_signal`'s job, without which the f32 sum depends on timing.

    ```mlir
    // dQ^T of a key tile (head_dim 128 down, 64 queries across) into dq_accum.
    fa.ordered_wait %counters[%b, %h, %qt] equals %k : memref<?x?x?xi32>, index
    fa.accumulate_tile %dqt, %dq_accum[%b, %h, %q0] transposed overwrite(%first)
        : vector<128x64xf32>, memref<?x?x?x128xf32>
    fa.ordered_signal %counters[%b, %h, %qt] : memref<?x?x?xi32>
    ```
  }];
  let arguments = (ins FA_AccTile:$value,
                       Arg<FA_AccumWorkspace, "", [MemRead, MemWrite]>:$accum,
                       Index:$batch, Index:$head, Index:$row,
                       UnitAttr:$transposed, Optional<I1>:$first);
  let assemblyFormat = [{
    $value `,` $accum `[` $batch `,` $head `,` $row `]`
    (`transposed` $transposed^)? (`overwrite` `(` $first^ `)`)? attr-dict `:`
    type($value) `,` type($accum)
  }];
  let hasVerifier = 1;
}

def FA_OrderedWaitOp : FA_Op<"ordered_wait"> {
  let summary = "waits until a global counter reaches this block's turn";
  let description = [{
    Block-collective (see above). Thread 0 spins until
    `counters[batch, head, tile]` equals `expected` (i32 or index), reading
    it with `ld.acquire.gpu`, then the block synchronises: every thread's
    memory accesses after the op see the writes that the signalling blocks
    made before their `fa.ordered_signal`. Other threads only take the
    barrier. With `warp` the op is one warp's instead (a warp-specialised
    kernel's dQ writer): its lane 0 spins, then the warp synchronises
    (`bar.warp.sync`). No memory effects are declared: the op orders all
    memory, like a fence.
  }];
  let arguments = (ins FA_OrderCounters:$counters, Index:$batch, Index:$head,
                       Index:$tile, AnyTypeOf<[I32, Index]>:$expected,
                       UnitAttr:$warp);
  let assemblyFormat = [{
    $counters `[` $batch `,` $head `,` $tile `]` `equals` $expected
    (`warp` $warp^)? attr-dict `:` type($counters) `,` type($expected)
  }];
  let hasVerifier = 1;
}

def FA_OrderedSignalOp : FA_Op<"ordered_signal"> {
  let summary = "passes the turn on: increments a global counter with release";
  let description = [{
    Block-collective (see above). The block synchronises (every thread's
    adds and stores are done), then thread 0 adds 1 to
    `counters[batch, head, tile]` with release semantics at gpu scope
    (`fence.acq_rel.gpu` then a relaxed atomic add, CUTLASS's
    `red_release`): a block whose `fa.ordered_wait` reads the new value sees
    everything the block wrote before. With `warp` the op is one warp's
    instead: the warp synchronises, then its lane 0 increments. No memory
    effects are declared: the op orders all memory, like a fence.
  }];
  let arguments = (ins FA_OrderCounters:$counters, Index:$batch, Index:$head,
                       Index:$tile, UnitAttr:$warp);
  let assemblyFormat = [{
    $counters `[` $batch `,` $head `,` $tile `]` (`warp` $warp^)? attr-dict
    `:` type($counters)
  }];
  let hasVerifier = 1;
}

def FA_StagedAccumulator : MemRefRankOf<[F32], [2]>;

def FA_StageAccumulatorOp : FA_Op<"stage_accumulator"> {
  let summary = "stores a register tile of f32 into shared memory";
  let description = [{
    `buffer[i, j] = value[i, j]`, or with `transposed` `buffer[j, i] =
    value[i, j]`, each thread storing its own elements of the accumulator
    layout (collective as the tile is). `buffer` is a 2-D f32 workgroup
    buffer at least as large as the (transposed) tile; its rows may be
    longer than the tile's (a padded row stride: with rows of 4 mod 32
    words, a transposed tile's stores hit 32 different banks).

    With `swizzled`, the buffer (rows of a multiple of 32 values) holds the
    tile as TMA's 128-byte swizzle lays boxes of 128-byte rows out in shared
    memory, which is what `fa.accumulate_boxes_async` reads: panel after
    panel (panel p: columns 32 p to 32 p + 31 of every row, 128 bytes a
    row), 16-byte chunk c of row r at chunk c ^ (r mod 8) of its panel row.
    A transposed tile's stores hit 32 different banks there too, without
    padding. The buffer must be 1024-byte aligned (TMA's swizzle is one of
    shared-memory addresses, and the lowering flips address bits).

    ```mlir
    fa.stage_accumulator %dqt, %staged transposed
        : vector<128x64xf32>, memref<64x132xf32, #gpu.address_space<workgroup>>
    fa.stage_accumulator %dqt, %boxes transposed swizzled
        : vector<128x64xf32>, memref<64x128xf32, #gpu.address_space<workgroup>>
    ```
  }];
  let arguments = (ins FA_AccTile:$value,
                       Arg<FA_StagedAccumulator, "", [MemWrite]>:$buffer,
                       UnitAttr:$transposed, UnitAttr:$swizzled);
  let assemblyFormat = [{
    $value `,` $buffer (`transposed` $transposed^)? (`swizzled` $swizzled^)?
    attr-dict `:` type($value) `,` type($buffer)
  }];
  let hasVerifier = 1;
}

def FA_AccumulateBoxesAsyncOp : FA_Op<"accumulate_boxes_async",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "adds a staged f32 tile into a global workspace by TMA "
                "tensor reductions";
  let description = [{
    One warp's: `accum[batch, head, row + r, c] += buffer[r, c]` for every
    row `r` of `buffer` and column `c` below `accum`'s head_dim, where
    `map` is a tensor map of the f32 workspace `accum` ([batch, heads,
    seq, head_dim]) whose box is one 128-byte panel of `buffer`'s rows
    (`[1, 1, rows, 32]`, 128-byte swizzle), and `buffer` holds the tile as
    `fa.stage_accumulator swizzled` leaves it. Lane 0 issues one
    `cp.reduce.async.bulk.tensor.4d...add` per panel (with
    `overwrite(%first)` and `%first` true, `cp.async.bulk.tensor` stores
    instead: the first contributor writes, so the workspace needs no
    zeroing); rows past the sequence's end are TMA's out-of-bounds box
    elements, which it does not write. Then it waits until they have read
    `buffer` (`cp.async.bulk.wait_group.read 0`): when the op returns,
    `buffer` may be overwritten; `fa.wait_bulk_async` waits for the sums.
    `fence.proxy.async` first: the staged values, written by threads, are
    read by the TMA unit.

    Four instructions per 64-row tile of head_dim 128, where one bulk copy
    per row (64 per tile, from a buffer padded for conflict-free stores)
    left the writer warps behind.

    ```mlir
    fa.accumulate_boxes_async %boxes, %dq_accum_tma[%b, %h, %row]
        overwrite(%first)
        : memref<64x128xf32, #gpu.address_space<workgroup>>,
          !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x32xf32, 3>,
            swizzle = swizzle_128b, l2promo = none, oob = zero,
            interleave = none>
    ```
  }];
  let arguments = (ins FA_StagedAccumulator:$buffer,
                       FA_TensorMap:$map,
                       Index:$batch, Index:$head, Index:$row,
                       Optional<I1>:$first);
  let assemblyFormat = [{
    $buffer `,` $map `[` $batch `,` $head `,` $row `]`
    (`overwrite` `(` $first^ `)`)? attr-dict `:` type($buffer) `,`
    qualified(type($map))
  }];
  let hasVerifier = 1;
}

def FA_WaitBulkAsyncOp : FA_Op<"wait_bulk_async"> {
  let summary = "waits until the lane's bulk TMA accumulations are done";
  let description = [{
    After `fa.accumulate_boxes_async`, each lane waits until its bulk
    transfers have written global memory (`cp.async.bulk.wait_group 0`),
    then `fence.proxy.async.global`, so that a following generic-proxy
    release (`fa.ordered_signal`) covers the TMA's writes. No memory effects
    are declared: the op orders all memory, like a fence.
  }];
  let assemblyFormat = "attr-dict";
}

#endif // FA_DIALECT_FA_IR_FAASYNCOPS_TD
