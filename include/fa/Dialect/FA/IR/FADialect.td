//===- FADialect.td - The fa dialect ------------------------*- tablegen -*-===//
//
// The program level of the compiler: attention and LayerNorm as single ops on
// memrefs, before any decision about tiles, warps or memory.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FA_IR_FADIALECT_TD
#define FA_DIALECT_FA_IR_FADIALECT_TD

include "mlir/IR/OpBase.td"

def FA_Dialect : Dialect {
  let name = "fa";
  let cppNamespace = "::mlir::fa";
  let summary = "Fused attention and LayerNorm kernels for NVIDIA GPUs";
  let description = [{
    The `fa` dialect describes the jobs the compiler emits kernels for:
    scaled dot-product attention (forward and backward) and LayerNorm
    (forward and backward). Tensors use the layout
    `[batch, heads, seq, head_dim]`; key and value may have fewer heads than
    the query (grouped-query and multi-query attention). Ops work on memrefs
    in destination-passing style: inputs first, then the buffers they write.

    Kernel configuration travels in typed attributes (FAAttrs.td):
    `fa.tile = #fa.tile<...>` and `fa.rows = #fa.rows<...>` on functions and
    kernels, `fa.softmax_phase = #fa<phase ...>` on loops, the module's
    `fa.kernels`; the dialect checks that each holds its type.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Adds the attributes of FAAttrs.td (FAAttrs.cpp).
    void registerAttributes();
    /// Adds the types of FAAsyncOps.td (FAAsyncOps.cpp).
    void registerTypes();
  }];
}

class FA_Op<string mnemonic, list<Trait> traits = []>
    : Op<FA_Dialect, mnemonic, traits>;

#endif // FA_DIALECT_FA_IR_FADIALECT_TD
