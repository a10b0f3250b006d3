//===- DefaultTiles.cpp - Default attention tile configurations -----------===//

#include "fa/Dialect/FA/Transforms/DefaultTiles.h"

#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/AsmParser/AsmParser.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::fa;

namespace {
/// One line of DefaultTiles.def, its fields as written there.
struct DefaultTile {
  StringLiteral chip, direction, dtypes;
  int64_t headDim;
  StringLiteral causal, entries;
};

const DefaultTile kDefaultTiles[] = {
#define FA_DEFAULT_TILE(chip, direction, dtypes, headDim, causal, entries)     \
  {#chip, #direction, #dtypes, headDim, #causal, entries},
#include "fa/Dialect/FA/Transforms/DefaultTiles.def"
};

bool matches(const DefaultTile &tile, StringRef chip,
             AttentionDirection direction, Type element, int64_t headDim,
             bool causal) {
  StringRef dtypes = element.isF32() ? "f32" : "half";
  StringRef directionName =
      direction == AttentionDirection::Forward ? "forward" : "backward";
  return tile.chip == chip && tile.direction == directionName &&
         tile.dtypes == dtypes && tile.headDim == headDim &&
         (tile.causal == "any" || tile.causal == (causal ? "yes" : "no"));
}
} // namespace

FailureOr<DictionaryAttr>
mlir::fa::lookupDefaultTile(Operation *op, StringRef chip,
                            AttentionDirection direction, Type element,
                            int64_t headDim, bool causal) {
  const DefaultTile *tile = llvm::find_if(kDefaultTiles, [&](auto &entry) {
    return matches(entry, chip, direction, element, headDim, causal);
  });
  if (tile == std::end(kDefaultTiles))
    return DictionaryAttr();
  std::string text = ("{" + tile->entries + "}").str();
  auto entries =
      dyn_cast_or_null<DictionaryAttr>(parseAttribute(text, op->getContext()));
  if (!entries)
    return op->emitError() << "DefaultTiles.def: the " << tile->chip << " "
                           << tile->direction << " entry for " << tile->dtypes
                           << " head_dim " << tile->headDim
                           << " is not a dictionary's entries: "
                           << tile->entries,
           failure();
  return entries;
}

FailureOr<DictionaryAttr> mlir::fa::getDefaultTileEntries(
    Operation *func, StringRef chip, bool tileOptionsGiven,
    AttentionDirection direction, Type element, int64_t headDim, bool causal) {
  if (tileOptionsGiven || func->hasAttr(kTileConfigAttr))
    return DictionaryAttr();
  return lookupDefaultTile(func, chip, direction, element, headDim, causal);
}
