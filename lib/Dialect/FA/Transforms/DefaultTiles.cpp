//===- DefaultTiles.cpp - Default attention tile configurations -----------===//

#include "fa/Dialect/FA/Transforms/DefaultTiles.h"

#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/AsmParser/AsmParser.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;
using namespace mlir::fa;

namespace {
/// One line of DefaultTiles.def, its fields as written there.
struct DefaultTile {
  StringLiteral chip, direction, dtypes;
  int64_t headDim;
  StringLiteral causal, config;
};

const DefaultTile kDefaultTiles[] = {
#define FA_DEFAULT_TILE(chip, direction, dtypes, headDim, causal, config)      \
  {#chip, #direction, #dtypes, headDim, #causal, config},
#include "fa/Dialect/FA/Transforms/DefaultTiles.def"
};

StringRef directionName(AttentionDirection direction) {
  switch (direction) {
  case AttentionDirection::Forward:
    return "forward";
  case AttentionDirection::ForwardVariant:
    return "forward_variant";
  case AttentionDirection::Backward:
    return "backward";
  case AttentionDirection::BackwardVariant:
    return "backward_variant";
  }
  llvm_unreachable("unknown attention direction");
}

bool matches(const DefaultTile &tile, StringRef chip,
             AttentionDirection direction, Type element, int64_t headDim,
             bool causal) {
  StringRef dtypes = element.isF32() ? "f32" : "half";
  return tile.chip == chip && tile.direction == directionName(direction) &&
         tile.dtypes == dtypes && tile.headDim == headDim &&
         (tile.causal == "any" || tile.causal == (causal ? "yes" : "no"));
}
} // namespace

FailureOr<TileAttr> mlir::fa::lookupDefaultTile(Operation *op, StringRef chip,
                                                AttentionDirection direction,
                                                Type element, int64_t headDim,
                                                bool causal) {
  const DefaultTile *tile = llvm::find_if(kDefaultTiles, [&](auto &entry) {
    return matches(entry, chip, direction, element, headDim, causal);
  });
  if (tile == std::end(kDefaultTiles)) {
    std::optional<AttentionDirection> plainDirection;
    if (direction == AttentionDirection::ForwardVariant)
      plainDirection = AttentionDirection::Forward;
    if (direction == AttentionDirection::BackwardVariant)
      plainDirection = AttentionDirection::Backward;
    if (!plainDirection)
      return TileAttr();
    FailureOr<TileAttr> plain =
        lookupDefaultTile(op, chip, *plainDirection, element, headDim, causal);
    if (failed(plain) || !*plain)
      return plain;
    return plain->forVariants();
  }
  auto config = dyn_cast_or_null<TileAttr>(
      parseAttribute(tile->config, op->getContext()));
  if (!config)
    return op->emitError() << "DefaultTiles.def: the " << tile->chip << " "
                           << tile->direction << " entry for " << tile->dtypes
                           << " head_dim " << tile->headDim
                           << " is not a #fa.tile<...>: " << tile->config,
           failure();
  return config;
}

FailureOr<TileAttr> mlir::fa::getFunctionTileConfig(
    Operation *func, StringRef chip, bool tileOptionsGiven,
    AttentionDirection direction, Type element, int64_t headDim, bool causal) {
  if (auto config = func->getAttrOfType<TileAttr>(kTileConfigAttr))
    return config;
  if (!tileOptionsGiven) {
    FailureOr<TileAttr> config =
        lookupDefaultTile(func, chip, direction, element, headDim, causal);
    if (failed(config) || *config)
      return config;
  }
  return TileAttr::get(func->getContext());
}
