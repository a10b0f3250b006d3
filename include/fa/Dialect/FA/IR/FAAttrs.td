//===- FAAttrs.td - Attributes of the fa dialect ------------*- tablegen -*-===//
//
// The configuration a kernel is built with, as typed attributes: the tiling
// passes read them from a function (`fa.tile`, `fa.rows`), record the
// resolved ones on the kernels they build, and the passes after tiling and
// the lowerings read them from there. A misspelt key or a value of the wrong
// kind is a parse error; each default is written once, here.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FA_IR_FAATTRS_TD
#define FA_DIALECT_FA_IR_FAATTRS_TD

include "fa/Dialect/FA/IR/FADialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

class FA_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<FA_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

// A size a pass option supplies where the attribute leaves it out. (The
// parser refuses `true` and `false`, which MLIR's integer parser takes as 1
// and -1.)
class FA_SizeParameter<string desc>
    : OptionalParameter<"std::optional<int64_t>", desc> {
  let parser = "::mlir::fa::parseOptionalSize($_parser)";
  let printer = "$_printer << *$_self";
}

// A size whose default is fixed.
class FA_FixedSizeParameter<string default, string desc>
    : DefaultValuedParameter<"int64_t", default, desc> {
  let parser = "::mlir::fa::parseSize($_parser)";
}

// A flag, `true` or `false`, whose default is fixed.
class FA_FlagParameter<string default, string desc>
    : DefaultValuedParameter<"bool", default, desc> {
  let parser = "::mlir::fa::parseFlag($_parser)";
}

// A flag a pass option supplies where the attribute leaves it out.
class FA_OptionalFlagParameter<string desc>
    : OptionalParameter<"std::optional<bool>", desc> {
  let parser = "::mlir::fa::parseOptionalFlag($_parser)";
  let printer = "$_printer << *$_self";
}

// The defaults of the flags and fixed sizes, for their parameters and for the
// builders of attributes without entries.
defvar FA_QInSharedDefault = "false";
defvar FA_PipelineCopiesDefault = "true";
defvar FA_SkipUnitRescaleDefault = "true";
defvar FA_StageOutputDefault = "false";
defvar FA_WgmmaDefault = "false";
defvar FA_OverlapSoftmaxDefault = "false";
defvar FA_SplitDkdvDefault = "false";
defvar FA_WarpSpecializeDefault = "false";
defvar FA_PingPongDefault = "false";
defvar FA_PersistentDefault = "false";
defvar FA_FuseDqDefault = "false";
defvar FA_ReduceRowsDefault = "64";
defvar FA_ReduceColsDefault = "32";
defvar FA_ReduceWarpsDefault = "8";

def FA_TileAttr : FA_Attr<"Tile", "tile"> {
  let summary = "tile configuration of an attention kernel";
  let description = [{
    How `fa-tile-attention` and `fa-tile-attention-grad` tile an attention
    function, written on it as `fa.tile` and recorded, every size resolved,
    on each kernel they build (where fa-pipeline-kv-copies,
    fa-overlap-softmax and convert-fa-to-nvgpu read it):

    ```mlir
    func.func @attn(...) attributes {fa.tile = #fa.tile<block_m = 128,
        block_n = 128, num_warps = 8, num_stages = 2, q_in_shared = true,
        wgmma = true>}
    ```

    A size left out takes the pass option (`block-m`, ...); a flag left out
    its default. `block_m` is the rows of a kernel's tiles (queries, or keys
    in the backward's dK/dV kernel), `block_n` the length of the tiles its
    loop walks. The flags other than `wgmma` configure the forward only, and
    the backward's dQ kernel takes `dq_block_m`, `dq_block_n` and
    `dq_num_warps` where given (else the entries without `dq_`).
    `split_dkdv` (backward only) splits the dK/dV kernel's blocks over a grid
    z of two (`dkdv_parts`): blocks of z = 0 accumulate dV, blocks of z = 1
    dK, so that each holds one block_m x head_dim accumulator (head_dim 256,
    where both would take every register). `fuse_dq` (backward only) asks
    for the fused dQ of `fa-tile-attention-grad fuse-dq` for this function
    alone, so that one library holds both forms and `fa-run tune` picks. One
    attribute serves both directions so that DefaultTiles.def and the kernel
    library describe every attention kernel the same way, and each pass
    refuses the other direction's entries.
  }];
  let parameters = (ins
    FA_SizeParameter<"query rows (or keys) per thread block">:$block_m,
    FA_SizeParameter<"keys (or queries) per tile of the loop">:$block_n,
    FA_SizeParameter<"warps per thread block">:$num_warps,
    FA_SizeParameter<"shared-memory slots per loop tile: 1 or 2">:$num_stages,
    FA_FlagParameter<FA_QInSharedDefault, "keep the query tile in shared memory">
        :$q_in_shared,
    FA_FlagParameter<FA_PipelineCopiesDefault, "let fa-pipeline-kv-copies make the K/V copies "
        "asynchronous">:$pipeline_copies,
    FA_FlagParameter<FA_SkipUnitRescaleDefault, "skip the accumulator rescale of warps whose row "
        "maxima did not change">:$skip_unit_rescale,
    FA_FlagParameter<FA_StageOutputDefault, "store the output tile through shared memory">
        :$stage_output,
    FA_FlagParameter<FA_WgmmaDefault, "run the products as Hopper warpgroup MMAs">
        :$wgmma,
    FA_FlagParameter<FA_OverlapSoftmaxDefault, "run each key tile's softmax during the previous "
        "tile's P @ V (fa-overlap-softmax)">:$overlap_softmax,
    FA_SizeParameter<"the backward's dQ kernel: query rows per block">
        :$dq_block_m,
    FA_SizeParameter<"the backward's dQ kernel: keys per tile">:$dq_block_n,
    FA_SizeParameter<"the backward's dQ kernel: warps per block">
        :$dq_num_warps,
    FA_FlagParameter<FA_SplitDkdvDefault, "the backward's dK/dV kernel: dV "
        "in blocks of grid z 0, dK in blocks of grid z 1 (one accumulator "
        "each)">:$split_dkdv,
    FA_FlagParameter<FA_WarpSpecializeDefault, "forward, wgmma: a producer "
        "warpgroup loads K and V through TMA rings for the computing "
        "warpgroups (fa-warp-specialize)">:$warp_specialize,
    FA_FlagParameter<FA_PingPongDefault, "with warp_specialize and two "
        "computing warpgroups: they take turns issuing their products, so "
        "one's softmax runs under the other's (fa-warp-specialize)">:$ping_pong,
    FA_SizeParameter<"forward: blocks compiled to fit on a multiprocessor "
        "at once (nvvm.minctasm: ptxas caps the registers so that they "
        "do)">:$blocks_per_sm,
    FA_FlagParameter<FA_PersistentDefault, "forward, with warp_specialize: "
        "one block per resident slot walks query tiles (grid "
        "persistent_query_tiles), its producer loading the next tile's K and "
        "V during the current one's epilogue">:$persistent,
    FA_FlagParameter<FA_FuseDqDefault, "backward, head_dim 128 on two "
        "warpgroups of wgmma, no mask region: the dK/dV kernel computes dQ "
        "too and adds it, in a fixed order, into an f32 workspace that the "
        "attention_bwd kernel only converts (fa-tile-attention-grad)">:$fuse_dq
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let builders = [
    // No entries: no size, every flag at its default.
    AttrBuilder<(ins), !strconcat("return $_get($_ctxt, std::nullopt, "
        "std::nullopt, std::nullopt, std::nullopt, ", FA_QInSharedDefault,
        ", ", FA_PipelineCopiesDefault, ", ", FA_SkipUnitRescaleDefault, ", ",
        FA_StageOutputDefault, ", ", FA_WgmmaDefault, ", ",
        FA_OverlapSoftmaxDefault,
        ", std::nullopt, std::nullopt, std::nullopt, ", FA_SplitDkdvDefault,
        ", ", FA_WarpSpecializeDefault, ", ", FA_PingPongDefault,
        ", std::nullopt, ", FA_PersistentDefault, ", ", FA_FuseDqDefault,
        ");")>
  ];
  let extraClassDeclaration = [{
    /// This configuration with the sizes it leaves out (block_m, block_n,
    /// num_warps, num_stages) set to the given ones.
    TileAttr withDefaultSizes(int64_t blockM, int64_t blockN,
                              int64_t numWarps, int64_t numStages) const;
    /// This configuration as a variant's kernel (mask or score regions,
    /// dropout) takes a plain kernel's default: without warp_specialize,
    /// ping_pong and persistent (fa-warp-specialize cannot split it yet) and
    /// without blocks_per_sm (sized for the plain kernel's registers; a
    /// variant's regions take more, and held to the plain kernel's count
    /// they spill).
    TileAttr forVariants() const;
    /// The shared-memory slots per loop tile of a kernel: 1 where num_stages
    /// is absent (a kernel made by other means than the tiling passes).
    int64_t getStageCount() const { return getNumStages().value_or(1); }
    /// Whether any dq_* entry is given.
    bool hasDqEntries() const {
      return getDqBlockM() || getDqBlockN() || getDqNumWarps();
    }
  }];
}

def FA_RowsAttr : FA_Attr<"Rows", "rows"> {
  let summary = "configuration of a row-wise (LayerNorm) kernel";
  let description = [{
    How `fa-tile-layernorm` blocks the rows of a LayerNorm function, written
    on it as `fa.rows` and recorded on each kernel it builds (where
    convert-fa-rows-to-gpu reads `rows` and `block_cols`):

    ```mlir
    func.func @ln(...) attributes {fa.rows = #fa.rows<rows = 1,
        block_cols = 4096, num_warps = 8, resident = true>}
    ```

    `rows`, `block_cols`, `num_warps` and `resident` left out take the pass
    options. `persistent` (forward only) walks many row blocks per thread
    block; `reduce_rows`, `reduce_cols` and `reduce_warps` are the layout of
    the backward's second kernel, which sums the partial rows.
  }];
  let parameters = (ins
    FA_SizeParameter<"rows per block of rows">:$rows,
    FA_SizeParameter<"columns per block of rows">:$block_cols,
    FA_SizeParameter<"warps per thread block">:$num_warps,
    FA_OptionalFlagParameter<"the whole row stays in registers">:$resident,
    FA_FlagParameter<FA_PersistentDefault, "forward: each block walks many row blocks, "
        "loading the next while it works on the current">:$persistent,
    FA_FixedSizeParameter<FA_ReduceRowsDefault, "the backward's reduction kernel: "
        "rows in flight per block">:$reduce_rows,
    FA_FixedSizeParameter<FA_ReduceColsDefault, "the backward's reduction kernel: "
        "columns per block">:$reduce_cols,
    FA_FixedSizeParameter<FA_ReduceWarpsDefault, "the backward's reduction kernel: "
        "warps per block">:$reduce_warps
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let builders = [
    // No entries: no size, persistent and the reduction kernel's entries at
    // their defaults.
    AttrBuilder<(ins), !strconcat("return $_get($_ctxt, std::nullopt, "
        "std::nullopt, std::nullopt, std::nullopt, ", FA_PersistentDefault,
        ", ", FA_ReduceRowsDefault, ", ", FA_ReduceColsDefault, ", ",
        FA_ReduceWarpsDefault, ");")>,
    // A kernel's layout, the reduction kernel's entries at their defaults.
    AttrBuilder<(ins "int64_t":$rows, "int64_t":$blockCols,
                     "int64_t":$numWarps, "std::optional<bool>":$resident,
                     "bool":$persistent),
        !strconcat("return $_get($_ctxt, rows, blockCols, numWarps, "
            "resident, persistent, ", FA_ReduceRowsDefault, ", ",
            FA_ReduceColsDefault, ", ", FA_ReduceWarpsDefault, ");")>
  ];
}

def FA_SoftmaxPhase : I32EnumAttr<"SoftmaxPhase",
    "which phase of the softmax a key/value loop computes", [
      I32EnumAttrCase<"Max", 0, "max">,
      I32EnumAttrCase<"Sum", 1, "sum">,
      I32EnumAttrCase<"Accumulate", 2, "accumulate">,
      I32EnumAttrCase<"Online", 3, "online">
    ]> {
  let cppNamespace = "::mlir::fa";
  let genSpecializedAttr = 0;
}

def FA_SoftmaxPhaseAttr : EnumAttr<FA_Dialect, FA_SoftmaxPhase, "phase"> {
  let summary = "the softmax phase of a key/value loop (fa.softmax_phase)";
  let description = [{
    `fa-tile-attention` marks its three key/value loops `#fa<phase max>`,
    `#fa<phase sum>` and `#fa<phase accumulate>` (the safe softmax);
    `fa-fuse-online-softmax` replaces them by one `#fa<phase online>` loop,
    which fa-pipeline-kv-copies and fa-overlap-softmax then rewrite.
  }];
}


//===----------------------------------------------------------------------===//
// The manifest entry of a kernel
//===----------------------------------------------------------------------===//

def FA_KernelOp : I32EnumAttr<"KernelOp",
    "what a kernel of the library computes (the manifest's op)", [
      I32EnumAttrCase<"AttentionFwd", 0, "attention_fwd">,
      I32EnumAttrCase<"AttentionBwd", 1, "attention_bwd">,
      I32EnumAttrCase<"AttentionBwdDelta", 2, "attention_bwd_delta">,
      I32EnumAttrCase<"AttentionBwdDkdv", 3, "attention_bwd_dkdv">,
      I32EnumAttrCase<"LayerNormFwd", 4, "layernorm_fwd">,
      I32EnumAttrCase<"LayerNormBwd", 5, "layernorm_bwd">,
      I32EnumAttrCase<"LayerNormBwdParams", 6, "layernorm_bwd_params">,
      I32EnumAttrCase<"AttentionBwdDsinks", 7, "attention_bwd_dsinks">
    ]> {
  let cppNamespace = "::mlir::fa";
  let genSpecializedAttr = 0;
}

def FA_GridDim : I32EnumAttr<"GridDim",
    "what the runtime sizes a grid dimension of a kernel by", [
      I32EnumAttrCase<"QueryTiles", 0, "query_tiles">,
      I32EnumAttrCase<"KeyTiles", 1, "key_tiles">,
      I32EnumAttrCase<"BatchHeads", 2, "batch_heads">,
      I32EnumAttrCase<"BatchKvHeads", 3, "batch_kv_heads">,
      I32EnumAttrCase<"RowTiles", 4, "row_tiles">,
      I32EnumAttrCase<"PersistentRowTiles", 5, "persistent_row_tiles">,
      I32EnumAttrCase<"ColumnTiles", 6, "column_tiles">,
      I32EnumAttrCase<"One", 7, "one">,
      I32EnumAttrCase<"Heads", 8, "heads">,
      // Two: the dK/dV kernel's halves under split_dkdv (dV, then dK).
      I32EnumAttrCase<"DkdvParts", 9, "dkdv_parts">,
      // min(query_tiles * batch_heads, the blocks resident at once): a
      // persistent forward's blocks, each walking tiles t = blockIdx.x,
      // blockIdx.x + gridDim.x, ... (any count is correct).
      I32EnumAttrCase<"PersistentQueryTiles", 10, "persistent_query_tiles">
    ]> {
  let cppNamespace = "::mlir::fa";
  let genSpecializedAttr = 0;
}

// A list in square brackets (a struct's entries are separated by commas).
class FA_ListParameter<string element, string desc>
    : ArrayRefParameter<element, desc> {
  let parser = "::mlir::fa::parseSquareList<" # element # ">($_parser)";
  let printer = "::mlir::fa::printSquareList($_printer, $_self)";
}

def FA_KernelParamAttr : FA_Attr<"KernelParam", "param"> {
  let summary = "a kernel parameter of the manifest: its name and type";
  let description = [{
    `#fa.param<"q" : memref<?x?x?x64xbf16>>`: a memref parameter (passed in
    MLIR's memref-descriptor ABI; the manifest gives its dtype and rank),
    `#fa.param<"eps" : f32>`, a scalar passed by value, or
    `#fa.param<"k_tma" : !nvgpu.tensormap.descriptor<...>>`, a TMA tensor map
    passed by value, which the runtime encodes from memref parameter `k`
    (fa-export-kernels checks the `<tensor>_tma` naming).
  }];
  let parameters = (ins StringRefParameter<"the name the runtime binds">:$name,
                        "Type":$type);
  let assemblyFormat = "`<` $name `:` $type `>`";
  let genVerifyDecl = 1;
}

def FA_KernelAttr : FA_Attr<"Kernel", "kernel"> {
  let summary = "how the runtime launches a kernel (its manifest entry)";
  let description = [{
    The tiling passes record one per kernel in the module's `fa.kernels`
    (kernel name -> `#fa.kernel<...>`), and fa-export-kernels writes each as
    the kernel's entry of manifest.json:

    ```mlir
    #fa.kernel<op = attention_fwd, dtype = bf16, head_dim = 64,
               causal = true, scale = 1.250000e-01 : f32,
               config = #fa.tile<block_m = 64, ...>, block = [128, 1, 1],
               grid = [query_tiles, batch_heads, one],
               params = [#fa.param<"q" : memref<?x?x?x64xbf16>>, ...]>
    ```

    `head_dim`, `causal`, `scale` and `variant` (the named variants its
    regions compute, `"window+softcap"`, or the name a user gave a region:
    the function's `fa.variant`; absent for plain kernels) are the attention
    kernels'; the
    backward's dQ kernel names its companions (`delta_kernel`,
    `dkdv_kernel`, and `dsinks_kernel` where it has sinks' gradient: an
    attention_bwd_dsinks kernel, row-wise, one block per query head), the
    LayerNorm backward its reduction kernel
    (`params_kernel`). `config` is the kernel's own configuration, the one it
    carries as `fa.tile` or `fa.rows`.
  }];
  let parameters = (ins
    "KernelOp":$op,
    "Type":$dtype,
    FA_SizeParameter<"attention: the head dimension">:$head_dim,
    FA_OptionalFlagParameter<"attention: the causal mask">:$causal,
    OptionalParameter<"FloatAttr", "attention: the softmax scale">:$scale,
    "Attribute":$config,
    FA_ListParameter<"int64_t", "threads of a block in x, y, z">:$block,
    FA_ListParameter<"GridDim", "the grid's x, y, z">:$grid,
    FA_ListParameter<"KernelParamAttr", "the parameters, in order">:$params,
    OptionalParameter<"StringAttr", "attention_bwd: the delta kernel">
        :$delta_kernel,
    OptionalParameter<"StringAttr", "attention_bwd: the dK/dV kernel">
        :$dkdv_kernel,
    OptionalParameter<"StringAttr", "layernorm_bwd: the reduction kernel">
        :$params_kernel,
    OptionalParameter<"StringAttr", "attention_bwd: the dsinks kernel">
        :$dsinks_kernel,
    OptionalParameter<"StringAttr",
        "attention: the variant its mask/score regions compute">:$variant
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // FA_DIALECT_FA_IR_FAATTRS_TD
