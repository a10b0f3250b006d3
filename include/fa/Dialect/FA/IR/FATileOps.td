//===- FATileOps.td - Tile-level ops of the fa dialect ------*- tablegen -*-===//
//
// The tiled level: what `--fa-tile-attention` produces. A kernel body works
// on whole-block tiles held as SSA values (2-D vectors: `vector<BMxNxT>`),
// per-row statistics (`vector<BMxf32>`) and shared-memory tiles (memrefs in
// the workgroup address space). Elementwise math on tiles uses `arith` and
// `math`, row reductions use `vector.multi_reduction`; the ops below cover
// what upstream does not: memory movement with bounds, tensor-core matmuls on
// shared-memory operands, row broadcasts and structured masks.
//
// Distribution over warps is decided later, by `--convert-fa-to-nvgpu`: every
// 2-D tile gets the tensor-core accumulator layout (16 rows per warp), every
// row vector the matching two-rows-per-lane layout.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FA_IR_FATILEOPS_TD
#define FA_DIALECT_FA_IR_FATILEOPS_TD

include "fa/Dialect/FA/IR/FADialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def FA_Tile : VectorOfRankAndType<[2], [F16, BF16, F32]>;
def FA_AccTile : VectorOfRankAndType<[2], [F32]>;
def FA_RowVector : VectorOfRankAndType<[1], [F32]>;
def FA_SharedTile : MemRefRankOf<[F16, BF16, F32], [2]>;
def FA_SharedRows : MemRefRankOf<[F32], [1]>;

def FA_LoadTileOp : FA_Op<"load_tile", [Pure]> {
  let summary = "loads rows of one (batch, head) slice into a register tile";
  let description = [{
    Reads rows `[row, row + R)` of `source[batch, head]` (shape
    `[batch, heads, seq, D]`) into an `R x D` tile. Rows at or beyond `seq`
    read as zero, so a tile that straddles the end of the sequence is safe.
  }];
  let arguments = (ins Arg<FA_Tensor4D, "", [MemRead]>:$source, Index:$batch,
                       Index:$head, Index:$row);
  let results = (outs FA_Tile:$result);
  let assemblyFormat = [{
    $source `[` $batch `,` $head `,` $row `]` attr-dict `:` type($source)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def FA_StageTileOp : FA_Op<"stage_tile"> {
  let summary = "copies rows of one (batch, head) slice into shared memory";
  let description = [{
    The whole thread block copies rows `[row, row + R)` of
    `source[batch, head]` into the shared-memory tile `dest` (`R x D`); rows at
    or beyond `seq` are written as zero (a zero row of V contributes nothing
    even where its probability is masked to zero, unlike stale data that may
    hold NaN). The lowering owns the physical layout (swizzle) of `dest`, so
    `dest` must only be read by `fa.tile_matmul`.
  }];
  let arguments = (ins Arg<FA_Tensor4D, "", [MemRead]>:$source, Index:$batch,
                       Index:$head, Index:$row,
                       Arg<FA_SharedTile, "", [MemWrite]>:$dest);
  let assemblyFormat = [{
    $source `[` $batch `,` $head `,` $row `]` `into` $dest attr-dict `:`
    type($source) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def FA_CopyTileAsyncOp : FA_Op<"copy_tile_async"> {
  let summary = "starts copying rows of one (batch, head) slice into shared memory";
  let description = [{
    The asynchronous half of `fa.stage_tile`: every thread starts its share of
    the copy of rows `[row, row + R)` of `source[batch, head]` into `dest`
    (rows at or beyond `seq` arrive as zero) and returns at once. The data
    may be read only after a later `fa.wait_tiles`; no barrier is implied,
    so `dest` must not be read by any warp while the copy is in flight.
  }];
  let arguments = (ins Arg<FA_Tensor4D, "", [MemRead]>:$source, Index:$batch,
                       Index:$head, Index:$row,
                       Arg<FA_SharedTile, "", [MemWrite]>:$dest);
  let assemblyFormat = [{
    $source `[` $batch `,` $head `,` $row `]` `into` $dest attr-dict `:`
    type($source) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def FA_StageRowsOp : FA_Op<"stage_rows"> {
  let summary = "copies per-row statistics of one (batch, head) into shared memory";
  let description = [{
    The whole thread block copies `source[batch, head, row + i]` for
    `i < R` (`source` a `[batch, heads, seq]` f32 buffer such as the
    log-sum-exp) into the shared buffer `dest` of `R` values; entries at or
    beyond `seq` are written as zero. A loop that stages a tile of queries
    stages their statistics with it, so that fa-pipeline-kv-copies loads
    both ahead together and the loop reads the values from shared memory
    (`fa.column_broadcast_shared`) instead of waiting on global loads.
  }];
  let arguments = (ins Arg<MemRefRankOf<[F32], [3]>, "", [MemRead]>:$source,
                       Index:$batch, Index:$head, Index:$row,
                       Arg<FA_SharedRows, "", [MemWrite]>:$dest);
  let assemblyFormat = [{
    $source `[` $batch `,` $head `,` $row `]` `into` $dest attr-dict `:`
    type($source) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def FA_CopyRowsAsyncOp : FA_Op<"copy_rows_async"> {
  let summary = "starts copying per-row statistics of one (batch, head) into shared memory";
  let description = [{
    The asynchronous half of `fa.stage_rows`, as `fa.copy_tile_async` is of
    `fa.stage_tile`: threads start copying `source[batch, head, row + i]`
    into `dest[i]` (zero at or beyond `seq`) and return at once; `dest` may
    be read only after a later `fa.wait_tiles`.
  }];
  let arguments = (ins Arg<MemRefRankOf<[F32], [3]>, "", [MemRead]>:$source,
                       Index:$batch, Index:$head, Index:$row,
                       Arg<FA_SharedRows, "", [MemWrite]>:$dest);
  let assemblyFormat = [{
    $source `[` $batch `,` $head `,` $row `]` `into` $dest attr-dict `:`
    type($source) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def FA_WaitTilesOp : FA_Op<"wait_tiles"> {
  let summary = "waits for this block's asynchronous tile copies";
  let description = [{
    Returns when every `fa.copy_tile_async` started by the block has landed,
    then synchronises the block: after it, the copied tiles are visible to
    every warp, and every warp has finished what it did before it.
  }];
  let assemblyFormat = "attr-dict";
}

def FA_TileMatmulOp : FA_Op<"tile_matmul", [AllTypesMatch<["acc", "result"]>]> {
  let summary = "tile matrix product on tensor cores: acc + op(a) @ op(b)";
  let description = [{
    `a` is an `M x K` tile, in registers or (to spare registers) in shared
    memory as staged by `fa.stage_tile`; `b` a shared-memory tile
    holding either `K x N` or, with `transpose_b`, `N x K` (so `q @ k^T`
    reads K as staged). Products accumulate in f32 into `acc` (`M x N`).

    With `transpose_a`, `a` is a shared-memory tile holding `K x M` and the
    product is `acc + a^T @ op(b)`: the backward's `dQ^T = K^T dS^T` reads
    the key tile as staged (`[keys][head_dim]`). Only the wgmma lowering
    (`#fa.tile<wgmma = true>`, f16/bf16) reads such an `a`.
  }];
  let arguments = (ins Arg<AnyTypeOf<[FA_Tile, FA_SharedTile]>, "", [MemRead]>:$a,
                       Arg<FA_SharedTile, "", [MemRead]>:$b,
                       FA_AccTile:$acc, UnitAttr:$transpose_b,
                       UnitAttr:$transpose_a);
  let results = (outs FA_AccTile:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $acc (`transpose_a` $transpose_a^)?
    (`transpose_b` $transpose_b^)? attr-dict `:`
    type($a) `,` type($b) `,` type($acc)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The first op of this product's block that uses its result (or holds
    /// a use in a region), null if none: where a lowering that issues the
    /// product asynchronously (wgmma) waits for it, and so the first point
    /// after which its operands may be overwritten (fa-warp-specialize
    /// releases a ring slot right after it).
    Operation *getFirstUseInBlock();
  }];
}

def FA_RowBroadcastOp : FA_Op<"row_broadcast", [Pure]> {
  let summary = "broadcasts one value per row across the columns of a tile";
  let description = [{
    `result[i, j] = source[i]`. (`vector.broadcast` repeats along leading
    dimensions, the other way round.)
  }];
  let arguments = (ins FA_RowVector:$source);
  let results = (outs FA_AccTile:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

def FA_ApplyMaskOp : FA_Op<"apply_mask", [Pure, AllTypesMatch<["scores", "result"]>]> {
  let summary = "sets masked attention scores to -inf";
  let description = [{
    For the score tile whose element `(i, j)` belongs to query `row + i` and
    key `col + j`: keys at or beyond `kv_len` are masked, and with `causal`
    also keys after the query (`col + j > row + i`). Masked elements become
    `-inf`, the rest pass through. `--fa-eliminate-causal-tiles` removes this
    op from the tiles where it can be proven to mask nothing.

    With `transposed` the tile holds scores transposed (the backward's
    `k @ q^T`): row `row + i` is a key and column `col + j` a query. Columns
    at or beyond `kv_len` (then the query length) are masked, and with
    `causal` the keys after the query (`row + i > col + j`).
  }];
  let arguments = (ins FA_AccTile:$scores, Index:$row, Index:$col,
                       Index:$kv_len, UnitAttr:$causal, UnitAttr:$transposed);
  let results = (outs FA_AccTile:$result);
  let assemblyFormat = [{
    $scores `rows` `(` $row `)` `cols` `(` $col `)` `kv_len` `(` $kv_len `)`
    (`causal` $causal^)? (`transposed` $transposed^)? attr-dict `:`
    type($scores)
  }];
}

// Tiles of scores under a mask or score region (fa.attention's `mask` and
// `score`, copied with their captures). IsolatedFromAbove like the program
// op: the region reads only its block arguments, which the lowering binds to
// each element's (batch, head, q_idx, kv_idx) and the captures.
def FA_MaskTileOp : FA_Op<"mask_tile", [
    AllTypesMatch<["scores", "result"]>, IsolatedFromAbove,
    RecursiveMemoryEffects]> {
  let summary = "sets the scores a mask region drops to -inf";
  let description = [{
    For the score tile whose element `(i, j)` belongs to query `row + i` and
    key `col + j` of (`batch`, `head`): an element is kept when the `mask`
    region yields true for `(batch, head, row + i, col + j, captures...)`,
    its key lies before `kv_len` and, with `causal`, the key is not after the
    query (`col + j <= row + i`). Dropped elements become `-inf`.

    With `transposed` the tile holds scores transposed (the backward's
    `k @ q^T`): row `row + i` is a key and column `col + j` a query, and
    `kv_len` bounds the columns (then the query length).

    The classifier (`--fa-eliminate-causal-tiles`) analyses the region to
    remove this op from tiles that keep every element, and to skip tiles
    that keep none. `sorted_document_ids` lets it treat a comparison of
    document ids (`ids[b, q_idx] == ids[b, kv_idx]`) as packed documents:
    ids non-decreasing along each sequence (searched at run time).

    ```mlir
    %kept = fa.mask_tile %s rows(%row) cols(%col) kv_len(%n) at(%b, %h)
        captures(%left, %right : index, index) : vector<64x64xf32> {
    ^bb0(%bb: index, %hh: index, %q: index, %kv: index, %l: index, %r: index):
      ...
      fa.yield %keep : i1
    }
    ```
  }];
  let arguments = (ins FA_AccTile:$scores, Index:$row, Index:$col,
                       Index:$kv_len, Index:$batch, Index:$head,
                       Variadic<FA_CaptureType>:$captures, UnitAttr:$causal,
                       UnitAttr:$transposed, UnitAttr:$sorted_document_ids);
  let results = (outs FA_AccTile:$result);
  let regions = (region SizedRegion<1>:$mask);
  let assemblyFormat = [{
    $scores `rows` `(` $row `)` `cols` `(` $col `)` `kv_len` `(` $kv_len `)`
    `at` `(` $batch `,` $head `)`
    (`captures` `(` $captures^ `:` type($captures) `)`)?
    (`causal` $causal^)? (`transposed` $transposed^)?
    (`sorted_document_ids` $sorted_document_ids^)? attr-dict `:`
    type($scores) $mask
  }];
  let hasRegionVerifier = 1;
}

def FA_ScoreTileOp : FA_Op<"score_tile", [
    AllTypesMatch<["scores", "result"]>, IsolatedFromAbove,
    RecursiveMemoryEffects]> {
  let summary = "rewrites each score of a tile with a score region";
  let description = [{
    Element `(i, j)` of the result is what the `score` region yields for
    `(scores[i, j], batch, head, row + i, col + j, captures...)` (with
    `transposed`, `(..., col + j, row + i, ...)`: rows are keys). The
    backward also uses it with the region's derivative by the score
    (built by the compiler from the region), giving `f'(s)` per element.

    ```mlir
    %capped = fa.score_tile %s rows(%row) cols(%col) at(%b, %h)
        captures(%c : f32) : vector<64x64xf32> {
    ^bb0(%x: f32, %bb: index, %hh: index, %q: index, %kv: index, %cap: f32):
      ...
      fa.yield %y : f32
    }
    ```
  }];
  let arguments = (ins FA_AccTile:$scores, Index:$row, Index:$col,
                       Index:$batch, Index:$head,
                       Variadic<FA_CaptureType>:$captures,
                       UnitAttr:$transposed);
  let results = (outs FA_AccTile:$result);
  let regions = (region SizedRegion<1>:$score);
  let assemblyFormat = [{
    $scores `rows` `(` $row `)` `cols` `(` $col `)` `at` `(` $batch `,` $head
    `)` (`captures` `(` $captures^ `:` type($captures) `)`)?
    (`transposed` $transposed^)? attr-dict `:` type($scores) $score
  }];
  let hasRegionVerifier = 1;
}

def FA_StoreTileOp : FA_Op<"store_tile"> {
  let summary = "stores a register tile into rows of one (batch, head) slice";
  let description = [{
    Writes the `R x D` tile to rows `[row, row + R)` of `dest[batch, head]`,
    skipping rows at or beyond `seq`.

    With `through %staging` (an `R x D` shared tile of the same element type
    that nothing reads afterwards), the tile goes to global memory by way of
    shared memory: each lane's values land in the staging tile, then the
    block writes whole 16-byte chunks of rows, coalesced, instead of each
    lane storing its scattered pairs.
  }];
  let arguments = (ins FA_Tile:$value, Arg<FA_Tensor4D, "", [MemWrite]>:$dest,
                       Index:$batch, Index:$head, Index:$row,
                       Arg<Optional<FA_SharedTile>, "", [MemWrite, MemRead]>:$staging);
  let assemblyFormat = [{
    $value `,` $dest `[` $batch `,` $head `,` $row `]`
    (`through` $staging^ `:` type($staging))? attr-dict `:`
    type($value) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def FA_StoreTileSharedOp : FA_Op<"store_tile_shared"> {
  let summary = "stores a register tile into a shared tile for fa.tile_matmul";
  let description = [{
    The whole thread block (every thread, in uniform control flow) writes the
    `R x C` register tile into the shared-memory tile `dest`: `dest[i][j] =
    tile[i][j]` (`dest` is `R x C`), or with `transposed`, `dest[j][i] =
    tile[i][j]` (`dest` is `C x R`). `dest` gets exactly the physical layout
    (swizzle and, in wgmma kernels, panels) that `fa.stage_tile` gives a tile
    of its shape, so `fa.tile_matmul` may read it afterwards as `a` or `b`,
    in either orientation. The backward's fused dQ product stores dS^T (keys
    down, queries across) this way and reads it back as an operand.

    The op synchronises the block itself:
    1. a barrier first, so that no warp still reads `dest` from earlier
       work. A barrier cannot wait for an asynchronous wgmma, though: a
       `fa.tile_matmul` that read `dest` earlier must have been waited for,
       which its lowering does at the first use of its result, so that use
       must come before this op. With `no_leading_barrier` the caller
       guarantees it instead: the fused dQ's dS^T alternates between two
       slots, and the readers of a slot two query tiles back were waited
       for before every warp passed the previous tile's step 3;
    2. every lane writes its values;
    3. in wgmma kernels, `fence.proxy.async` (wgmma reads shared memory
       through the async proxy), then a barrier: afterwards every warp's
       `fa.tile_matmul` may read `dest`.
  }];
  let arguments = (ins FA_Tile:$tile, Arg<FA_SharedTile, "", [MemWrite]>:$dest,
                       UnitAttr:$transposed, UnitAttr:$no_leading_barrier);
  let assemblyFormat = [{
    $tile `,` $dest (`transposed` $transposed^)?
    (`no_leading_barrier` $no_leading_barrier^)? attr-dict `:`
    type($tile) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def FA_LoadRowsOp : FA_Op<"load_rows"> {
  let summary = "loads one f32 per row from a `[batch, heads, seq]` buffer";
  let description = [{
    `result[i] = source[batch, head, row + i]`, zero for rows at or beyond
    `seq`. The inverse of `fa.store_rows`: the backward reads the forward's
    log-sum-exp this way.
  }];
  let arguments = (ins Arg<MemRefRankOf<[F32], [3]>, "", [MemRead]>:$source,
                       Index:$batch, Index:$head, Index:$row);
  let results = (outs FA_RowVector:$result);
  let assemblyFormat = [{
    $source `[` $batch `,` $head `,` $row `]` attr-dict `:` type($source)
    `->` type($result)
  }];
}

def FA_ColumnBroadcastOp : FA_Op<"column_broadcast"> {
  let summary = "a tile whose every row holds values of a `[batch, heads, seq]` buffer";
  let description = [{
    `result[i, j] = source[batch, head, col + j]`, zero for columns at or
    beyond `seq`: one value per column, repeated down the rows. The
    backward's transposed tiles (keys down, queries across) need the
    queries' log-sum-exp and `delta` this way.
  }];
  let arguments = (ins Arg<MemRefRankOf<[F32], [3]>, "", [MemRead]>:$source,
                       Index:$batch, Index:$head, Index:$col);
  let results = (outs FA_AccTile:$result);
  let assemblyFormat = [{
    $source `[` $batch `,` $head `,` $col `]` attr-dict `:` type($source)
    `->` type($result)
  }];
}

def FA_ColumnBroadcastSharedOp : FA_Op<"column_broadcast_shared"> {
  let summary = "a tile whose every row holds the values of a shared buffer";
  let description = [{
    `result[i, j] = rows[j]`: `fa.column_broadcast` of values staged in
    shared memory by `fa.stage_rows` (which wrote zeros past `seq` already),
    one per column of the result.
  }];
  let arguments = (ins Arg<FA_SharedRows, "", [MemRead]>:$rows);
  let results = (outs FA_AccTile:$result);
  let assemblyFormat = [{
    $rows attr-dict `:` type($rows) `->` type($result)
  }];
  let hasVerifier = 1;
}

def FA_StoreRowsOp : FA_Op<"store_rows"> {
  let summary = "stores one f32 per row into a `[batch, heads, seq]` buffer";
  let description = [{
    Writes `value[i]` to `dest[batch, head, row + i]` for rows below `seq`.
  }];
  let arguments = (ins FA_RowVector:$value,
                       Arg<MemRefRankOf<[F32], [3]>, "", [MemWrite]>:$dest,
                       Index:$batch, Index:$head, Index:$row);
  let assemblyFormat = [{
    $value `,` $dest `[` $batch `,` $head `,` $row `]` attr-dict `:`
    type($value) `,` type($dest)
  }];
}


def FA_PhiloxOp : FA_Op<"philox", [Pure]> {
  let summary = "Philox-4x32-10: four random 32-bit words of a counter and key";
  let description = [{
    The counter-based generator of Salmon et al. (SC11) that attention
    dropout draws its mask from: ten rounds of 32 x 32 -> 64-bit products
    and xors turn the 128-bit counter `(c0, c1, c2, c3)` under the 64-bit
    key `(k0, k1)` into four 32-bit words, the same as Random123's
    `philox4x32_10` and the runtime's CPU reference
    (runtime/include/fa/runtime/Philox.h, whose header also specifies the
    dropout mask built on it). A pure function of its operands, computed
    per thread: any lane can draw the words of any counter.

    ```mlir
    %r0, %r1, %r2, %r3 = fa.philox key(%seed_lo, %seed_hi)
                                   counter(%c0, %c1, %c2, %c3)
    ```

    Every operand and result is an `i32`.
  }];
  let arguments = (ins I32:$key0, I32:$key1, I32:$counter0, I32:$counter1,
                       I32:$counter2, I32:$counter3);
  let results = (outs I32:$word0, I32:$word1, I32:$word2, I32:$word3);
  let assemblyFormat = [{
    `key` `(` $key0 `,` $key1 `)` `counter` `(` $counter0 `,` $counter1 `,`
    $counter2 `,` $counter3 `)` attr-dict
  }];
}

def FA_ApplyDropoutOp : FA_Op<"apply_dropout",
                              [Pure, AllTypesMatch<["probs", "result"]>]> {
  let summary = "attention dropout on a tile of probabilities";
  let description = [{
    For the tile whose element `(i, j)` is the probability of query
    `row + i` and key `col + j` of the (batch, head) pair `batch_head`
    (`b * H + h`): elements the mask of runtime/include/fa/runtime/Philox.h
    drops become 0, the others are multiplied by `1 / (1 - p)`. (query,
    key) is dropped where its 16 bits, value `t = 4 ((query / 8) mod 2) +
    (key / 8) mod 4` (the low or high half of word `t / 2`) of `fa.philox
    key(seed_lo, seed_hi) counter(8 (key / 32) + key mod 8, 8 (query / 16)
    + query mod 8, batch_head, offset)`, are below `floor(p * 2^16)`: the
    forward and the backward draw the same mask from the same operands,
    whatever their tiles. One Philox block holds the 16-bit values of
    queries `{i, i + 8}` times keys `{k, k + 8, k + 16, k + 24}`, elements
    one lane holds, so the lowering draws one block for each group of the
    lane's elements it can prove share one, from what it knows of `row` and
    `col` (multiples of constants through products and sums, loop
    induction variables with such bounds and steps): 8 elements per block
    in a tile of queries by keys whose `row` is a multiple of 16 and `col`
    of 32, one where nothing is known.

    With `transposed` the tile holds probabilities transposed (the
    backward's `k @ q^T`): row `row + i` is a key and column `col + j` a
    query.

    ```mlir
    %dropped = fa.apply_dropout %p rows(%row) cols(%col) batch_head(%bh)
        seed(%seed_lo, %seed_hi) offset(%offset) p(%prob) : vector<64x64xf32>
    ```
  }];
  let arguments = (ins FA_AccTile:$probs, Index:$row, Index:$col,
                       I32:$batch_head, I32:$seed_lo, I32:$seed_hi,
                       I32:$offset, F32:$p, UnitAttr:$transposed);
  let results = (outs FA_AccTile:$result);
  let assemblyFormat = [{
    $probs `rows` `(` $row `)` `cols` `(` $col `)` `batch_head` `(`
    $batch_head `)` `seed` `(` $seed_lo `,` $seed_hi `)` `offset` `(`
    $offset `)` `p` `(` $p `)` (`transposed` $transposed^)? attr-dict `:`
    type($probs)
  }];
}

//===----------------------------------------------------------------------===//
// Row-wise kernels (LayerNorm)
//
// What `--fa-tile-layernorm` produces. A thread block works on blocks of rows
// held as SSA values: `vector<R x C x T>` is rows `[row, row + R)` and
// columns `[col, col + C)` of a 2-D buffer, `vector<C x T>` one value per
// column (the same in every row: a weight), `vector<R x f32>` one value per
// row (a statistic). Row reductions are `vector.multi_reduction` over
// dimension 1, column reductions over dimension 0; `fa.row_broadcast` and
// `vector.broadcast` spread values back. `--convert-fa-rows-to-gpu` decides
// the distribution over threads.
//===----------------------------------------------------------------------===//

def FA_BlockVector : VectorOfRankAndType<[1, 2], [F16, BF16, F32]>;
def FA_BlockMemRef : MemRefRankOf<[F16, BF16, F32], [1, 2]>;

def FA_LoadBlockOp : FA_Op<"load_block"> {
  let summary = "loads a block of a 1-D or 2-D buffer, zero beyond its bounds";
  let description = [{
    Reads the `R x C` block of `source` (rank 2) starting at
    `[indices[0], indices[1]]`, or the `C` elements of `source` (rank 1)
    starting at `indices[0]`. Elements beyond the buffer's bounds read as
    zero, so a block may straddle the end of the rows or of the columns.

    ```mlir
    %x = fa.load_block %src[%row, %col] : memref<?x?xbf16> -> vector<1x1024xbf16>
    ```
  }];
  let arguments = (ins Arg<FA_BlockMemRef, "", [MemRead]>:$source,
                       Variadic<Index>:$indices);
  let results = (outs FA_BlockVector:$result);
  let assemblyFormat = [{
    $source `[` $indices `]` attr-dict `:` type($source) `->` type($result)
  }];
  let hasVerifier = 1;
}

def FA_StoreBlockOp : FA_Op<"store_block"> {
  let summary = "stores a block into a 1-D or 2-D buffer, skipping what lies beyond";
  let description = [{
    Writes `value` (`R x C` into a rank-2 `dest`, or `C` values into a rank-1
    `dest`) starting at `indices`; elements beyond the buffer's bounds are not
    written. A per-row vector (`vector<R x f32>`) into a rank-1 `dest` writes
    one value per row.
  }];
  let arguments = (ins FA_BlockVector:$value,
                       Arg<FA_BlockMemRef, "", [MemWrite]>:$dest,
                       Variadic<Index>:$indices);
  let assemblyFormat = [{
    $value `,` $dest `[` $indices `]` attr-dict `:` type($value) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def FA_ZeroColumnsOp : FA_Op<"zero_columns",
                             [Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "zeroes the columns of a block at or beyond a limit";
  let description = [{
    For the block whose column `j` is column `col + j` of its buffer:
    elements of columns at or beyond `limit` become 0, the others pass
    through. Loads fill those columns with zero, but `x - mean` there is not
    zero; row statistics must not see it.
  }];
  let arguments = (ins FA_AccTile:$value, Index:$col, Index:$limit);
  let results = (outs FA_AccTile:$result);
  let assemblyFormat = [{
    $value `cols` `(` $col `)` `limit` `(` $limit `)` attr-dict `:` type($value)
  }];
}

#endif // FA_DIALECT_FA_IR_FATILEOPS_TD
