//===- KernelLibrary.h - Compiled kernels and their manifest ----*- C++ -*-===//
//
// The compiler builds kernels ahead of time into a directory holding PTX files
// and a manifest.json describing each kernel:
//
//   {"format": "fa-kernel-library", "version": 1, "target": "sm_90a",
//    "kernels": [{"name": ..., "op": "attention_fwd", "ptx": "x.ptx",
//                 "entry": ..., "dtype": "bf16", "head_dim": 64,
//                 "causal": true, "scale": null,
//                 "config": {"block_m": 64, ...}, "block": [128, 1, 1],
//                 "grid": ["query_tiles", "batch_heads", "one"],
//                 "dynamic_shared_bytes": 0,
//                 "params": [{"name": "q", "kind": "memref",
//                             "dtype": "bf16", "rank": 4}, ...]}]}
//
// A memref parameter with "strided": true reads its strides (and offset)
// from the descriptor, so it takes views (MemrefArg::strides, KernelArgs.h);
// without the key (older manifests) or false, it is contiguous row-major.
//
// A "tensormap" parameter (a TMA tensor map, passed by value) may name the
// memref parameter it reads and how:
//
//   {"name": "k_tma", "kind": "tensormap", "tensor": "k", "dtype": "bf16",
//    "box": [1, 1, 128, 64], "swizzle": "128b"}
//
// "tensor" is a memref parameter of the same kernel, of "dtype" and of rank
// the box's; "box" is the box one load copies, outermost first, each size 1
// to 256; "swizzle" is "none", "32b", "64b" or "128b" (TensorMap.h). Then
// KernelArgs encodes the map from the tensor's value (tensorMapSpecOf) unless
// the caller binds the parameter itself. Without these keys (manifests
// written before them) the caller must bind it, as a TensorMapArg.
// An attention kernel whose q (or, for attention_bwd_delta, which has no q,
// out) is strided "takes views": the library compiles such twins of some
// groups' default kernels beside the contiguous ones, which are faster on
// contiguous tensors (kernels/CMakeLists.txt), and they form groups of their
// own (KernelQuery::views).
//
// An attention kernel may name a variant ("variant": "window+softcap", see
// AttentionVariant.h); absent or "" is a plain kernel (no mask beyond
// "causal", the top-left one). A variant kernel takes the variant's values
// as extra parameters, bound by name like q and k: "window_left" and
// "window_right" (i64), "softcap" (f32), "alibi_slopes" (memref f32 [heads]),
// "doc_ids" (memref i32 [batch, seq]), "sinks" (memref f32 [heads]),
// "dropout_p" (f32), "dropout_seed" (i64), "dropout_offset" (i32), and a
// user's captures under the names the user gave.
//
// A group is the kernels of one (op, dtype, head_dim, causal, variant,
// views): they compute the same thing with different tile configurations. The
// first one listed is the group's default; the others are candidates for
// `fa-run tune`, whose cache (TuningCache.h) may pick another one per sequence
// length.
//
// head_dim, causal, scale and config.block_m belong to attention ops (those
// whose op starts with "attention"). The attention backward is three kernels
// (Attention.h): attention_bwd computes dq and names its companions
// "delta_kernel" (an attention_bwd_delta kernel) and "dkdv_kernel" (an
// attention_bwd_dkdv kernel), which must be of its dtype, head_dim, causal
// and scale (and variant, and take views if it does). A sinks backward compiled
// with the sinks' gradient also names "dsinks_kernel", an attention_bwd_dsinks
// kernel: row-wise like layernorm_bwd_params (a rows config; no head_dim,
// causal or scale), grid ["heads", "one", "one"], params lse, delta, sinks,
// dsinks. LayerNorm kernels (ops layernorm_fwd, layernorm_bwd,
// layernorm_bwd_params) have none of them; their config has "rows" (rows per
// tile), "block_cols" and, but for layernorm_bwd_params, "resident";
// layernorm_fwd takes eps as an f32 parameter named "eps" and layernorm_bwd
// names its companion "params_kernel" (LayerNorm.h says how they are chosen and
// launched).
//
// This file parses the manifest (defensively: every error names the kernel
// and the key) and finds kernels and groups. It needs no GPU.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_KERNELLIBRARY_H
#define FA_RUNTIME_KERNELLIBRARY_H

#include "fa/runtime/DType.h"
#include "fa/runtime/Launch.h"
#include "fa/runtime/Tensor.h"
#include "fa/runtime/TensorMap.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fa {

inline constexpr const char *kAttentionForwardOp = "attention_fwd";
inline constexpr const char *kAttentionBackwardOp = "attention_bwd";
inline constexpr const char *kAttentionDeltaOp = "attention_bwd_delta";
inline constexpr const char *kAttentionDkDvOp = "attention_bwd_dkdv";
inline constexpr const char *kAttentionDsinksOp = "attention_bwd_dsinks";
inline constexpr const char *kLayerNormForwardOp = "layernorm_fwd";
inline constexpr const char *kLayerNormBackwardOp = "layernorm_bwd";
inline constexpr const char *kLayerNormParamsOp = "layernorm_bwd_params";

/// Whether `op` is an attention op ("attention_fwd", ...).
bool isAttentionOp(const std::string &op);
/// Whether `op`'s kernels have head_dim, causal, scale and config.block_m:
/// every attention op but attention_bwd_dsinks (a row-wise kernel over
/// [batch, heads, seq_q] statistics).
bool hasAttentionTile(const std::string &op);

/// Grid extents a manifest may name instead of a number, resolved at launch,
/// by the ops that may use them (every op may use "one" = 1):
///   attention ops         query_tiles = ceil(seq_q / block_m),
///                         batch_heads = batch * heads,
///                         key_tiles = ceil(seq_kv / block_m) (block_m keys
///                         per block, as attention_bwd_dkdv has them),
///                         batch_kv_heads = batch * kv_heads
///   attention_fwd         also persistent_query_tiles: the blocks of a
///                         persistent kernel that loops over the
///                         query_tiles * batch_heads tiles, chosen by the
///                         runtime from the kernel's occupancy (Attention.h)
///   attention_bwd_dkdv    also dkdv_parts = 2, the grid z of a dK/dV kernel
///                         with config split_dkdv = 1 (dV in blocks of z 0,
///                         dK in blocks of z 1; a head_dim too wide for both
///                         accumulators in one block)
///   attention_bwd_dsinks  heads = heads (the query heads)
///   layernorm_fwd         row_tiles = ceil(rows / config.rows), or
///                         persistent_row_tiles as layernorm_bwd
///   layernorm_bwd         persistent_row_tiles, chosen by the runtime from
///                         the kernel's occupancy (LayerNorm.h)
///   layernorm_bwd_params  column_tiles = ceil(cols / config.block_cols)
/// Ops the runtime does not know may use any of them.
std::vector<std::string> gridSymbolsOf(const std::string &op);

/// A LayerNorm epsilon as messages show it: "1e-05".
std::string formatEps(double eps);

/// Memref: a tensor of a DType's elements; I32Memref: a tensor of int32
/// (index tensors such as doc_ids, which no --dtype names); the others are
/// scalars passed by value; TensorMap: a TMA tensor map passed by value (128
/// bytes, "tensormap": TensorMap.h, KernelArgs.h's TensorMapArg).
enum class ParamKind { Memref, I32Memref, I32, I64, F32, TensorMap };

struct KernelParam {
  std::string name;
  ParamKind kind = ParamKind::Memref;
  /// Memrefs, and tensor maps that name a `tensor`: the element type.
  DType dtype = DType::F32;
  int rank = 0; // Memrefs and I32Memrefs only.
  /// Memrefs only: the kernel takes element strides ("strided": true);
  /// otherwise it assumes row-major.
  bool strided = false;
  /// Tensor maps only: the memref parameter the map reads ("tensor"), from
  /// whose value KernelArgs encodes it; empty when the manifest names none
  /// (the caller binds the map itself, as a TensorMapArg).
  std::string tensor;
  /// Tensor maps naming a `tensor`: the box one TMA load copies, outermost
  /// first, one size per dimension of the tensor.
  Shape box;
  /// Tensor maps naming a `tensor`: how the box lands in shared memory.
  TensorMapSwizzle swizzle = TensorMapSwizzle::None;
};

/// "memref", "memref<i32>", "i32", "i64", "f32" or "tensormap".
const char *paramKindName(ParamKind kind);

/// One grid dimension: a symbol from gridSymbolsOf(op), or a fixed count when
/// `symbol` is empty.
struct GridExtent {
  std::string symbol;
  unsigned count = 1;
};

struct KernelQuery;

struct KernelSpec {
  std::string name;
  std::string op;
  std::string ptxPath; // Resolved against the library directory.
  std::string entry;
  std::string target; // The library's, e.g. "sm_90a".
  DType dtype = DType::BF16;
  std::int64_t headDim = 0;
  bool causal = false;
  /// The attention variant ('+'-joined named variants, or a user's name);
  /// empty for plain kernels and for ops other than attention.
  std::string variant;
  /// Attention kernels only: the kernel takes its attention tensors as
  /// strided views, i.e. its q parameter is strided (attention_bwd_delta,
  /// which has no q: its out). False for every other op.
  bool views = false;
  /// The softmax scale baked into the kernel; none means 1/sqrt(head_dim).
  std::optional<double> scale;
  std::map<std::string, std::int64_t> config; // Tile sizes, warps, stages.
  std::int64_t blockM = 0;                    // config["block_m"].
  // LayerNorm kernels only.
  std::int64_t rowsPerTile = 0; // config["rows"].
  std::int64_t blockCols = 0;   // config["block_cols"].
  /// config["resident"]: the kernel keeps a row on chip, so it handles rows
  /// of at most block_cols elements; otherwise it handles any row length.
  bool resident = false;
  std::string paramsKernel; // layernorm_bwd: its layernorm_bwd_params.
  // attention_bwd only: its attention_bwd_delta and attention_bwd_dkdv, and
  // (sinks kernels compiled with dsinks) its attention_bwd_dsinks, or "".
  std::string deltaKernel;
  std::string dkdvKernel;
  std::string dsinksKernel;
  Dim3 block;
  std::array<GridExtent, 3> grid;
  unsigned dynamicSharedBytes = 0;
  std::vector<KernelParam> params;

  double softmaxScale() const;
  /// The group the kernel belongs to.
  KernelQuery query() const;
  /// "attention_fwd bf16 head_dim=64 causal" (then " variant=window" for a
  /// variant kernel, " views" for one taking views); for LayerNorm kernels the
  /// rows they handle, e.g. "layernorm_fwd bf16 cols<=1024".
  std::string describe() const;
};

/// A group: for ops other than attention (and attention_bwd_dsinks), headDim
/// is 0, causal false, variant empty and views false. A plain query (variant
/// "") never matches a variant kernel, nor a variant query a plain one; a
/// query without views (the default) never matches a kernel taking views,
/// nor a views query a contiguous one.
struct KernelQuery {
  std::string op;
  DType dtype = DType::BF16;
  std::int64_t headDim = 0;
  bool causal = false;
  std::string variant;
  /// The kernels that take strided views (KernelSpec::views).
  bool views = false;

  KernelQuery() = default;
  // A constructor rather than an aggregate, so that queries written before
  // variants ({op, dtype, head_dim, causal}) stay plain and contiguous
  // without warnings.
  KernelQuery(std::string op, DType dtype, std::int64_t headDim = 0,
              bool causal = false, std::string variant = "", bool views = false)
      : op(std::move(op)), dtype(dtype), headDim(headDim), causal(causal),
        variant(std::move(variant)), views(views) {}

  bool matches(const KernelSpec &spec) const;
  bool operator==(const KernelQuery &other) const;
  std::string describe() const;
};

class KernelLibrary {
public:
  /// Reads `directory`/manifest.json.
  static KernelLibrary load(const std::string &directory);
  /// Parses manifest text; `manifestPath` names it in errors and its
  /// directory resolves the kernels' PTX paths.
  static KernelLibrary parse(const std::string &json,
                             const std::string &manifestPath);

  /// The group's default: the first kernel in manifest order that matches;
  /// throws, listing what the library has, when none does.
  const KernelSpec &find(const KernelQuery &query) const;
  /// Every kernel of the group, in manifest order (the default first).
  std::vector<const KernelSpec *> candidates(const KernelQuery &query) const;
  /// The kernel called `name`, or null.
  const KernelSpec *named(const std::string &name) const;
  /// The groups that have kernels, in the order of their first kernel.
  std::vector<KernelQuery> groups() const;
  /// The variants of `op`'s kernels, in the order of their first kernel
  /// ("" for plain kernels).
  std::vector<std::string> variants(const std::string &op) const;
  const std::vector<KernelSpec> &kernels() const { return specs; }
  /// The manifest it was read from, for messages.
  const std::string &path() const { return manifestPath; }

private:
  std::string manifestPath;
  std::vector<KernelSpec> specs;
};

} // namespace fa

#endif // FA_RUNTIME_KERNELLIBRARY_H
