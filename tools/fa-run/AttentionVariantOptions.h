//===- AttentionVariantOptions.h - The variant flags ------------*- C++ -*-===//
//
// The flags that choose an attention variant (AttentionVariant.h) and its
// values, and the variant they make for a problem's shape:
//
//   --causal[=top-left|bottom-right]   plain --causal is top-left, as before
//   --window L,R  --softcap C  --alibi
//   --doc-lens 300,1000,...  |  --doc-ids ids.npy
//   --sinks  |  --sinks-file s.npy
//   --dropout P  [--dropout-offset O]   (the mask's seed is the command's
//                                        --seed)
//   --variant NAME  --param NAME=VALUE|NAME=FILE.npy  --mask-file M.npy
//
// The kernels run are those whose manifest "variant" is the name the flags
// give: the named variants present, or --variant's user variant.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUN_ATTENTIONVARIANTOPTIONS_H
#define FA_RUN_ATTENTIONVARIANTOPTIONS_H

#include "fa/runtime/AttentionShape.h"
#include "fa/runtime/AttentionVariant.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace fa {

struct VariantOptions {
  std::string causal; // "", "top-left" or "bottom-right".
  std::string window; // "L,R".
  std::string softcap;
  bool alibi = false;
  std::string docLens; // "300,1000,...".
  std::string docIdsPath;
  bool sinks = false;
  std::string sinksPath;
  std::string dropout;       // "P".
  std::string dropoutOffset; // "O".
  std::string variantName;
  std::vector<std::string> params; // "NAME=VALUE".
  std::string maskPath;
};

/// Declares the flags on `command`, in the --help group "Variant".
void addVariantOptions(CLI::App *command, VariantOptions &options);

/// The variant the flags give for `shape`; `seed` (the command's --seed)
/// draws --sinks' logits and keys dropout's mask. Throws, naming the flag,
/// for a value that does not parse or does not fit the shape (negative
/// window, softcap <= 0, lengths not positive, ids of another shape or
/// decreasing, a mask of another shape, sinks of another shape or not
/// finite, dropout p outside [0, 1), an offset that is no u32, --param
/// without '=', a named --variant that the flags contradict).
AttentionVariant variantFromOptions(const VariantOptions &options,
                                    const AttentionShape &shape,
                                    std::uint64_t seed);

} // namespace fa

#endif // FA_RUN_ATTENTIONVARIANTOPTIONS_H
