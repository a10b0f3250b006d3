//===- Passes.td - Conversions out of the fa dialect --------*- tablegen -*-===//

#ifndef FA_CONVERSION_PASSES_TD
#define FA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertFAToNVGPU : Pass<"convert-fa-to-nvgpu"> {
  let summary = "Distribute tile-level fa ops over warps onto tensor cores";
  let description = [{
    The warp-level lowering. Every 2-D tile gets the m16n8k16 accumulator
    layout: each warp owns one or two 16-row blocks (block_m / (16 x warps),
    from the kernel's `fa.tile`), and in each of them each lane holds, for
    every 8-column block, 2 adjacent columns of rows `lane/4` and
    `lane/4 + 8`, as one flat register vector. With two row blocks every
    ldmatrix of K or V feeds two mma.sync. The f16/bf16 operand layout of the tensor-core A input is
    the same, so a probability tile converts to an operand in registers
    without any data movement. Row vectors become two values per lane.

    `fa.tile_matmul` becomes `ldmatrix` (x4, transposed for a row-major B) from
    an XOR-swizzled shared tile and `mma.sync.m16n8k16` with f32
    accumulation; row reductions reduce in registers then across the four
    lanes of a row with `gpu.shuffle xor`; `fa.stage_tile` becomes 16-byte
    cooperative copies into the swizzled layout between barriers; masks
    become one select per element; loads and stores become bounds-checked
    vector accesses. Elementwise `arith`/`math` on tiles and the `scf.for`
    loops carrying tiles follow the type conversion. A product of a tile and
    a row broadcast (the online softmax's accumulator rescale) runs only in
    warps where some row's factor differs from 1 (a vote; bit-identical),
    unless the kernel's `fa.tile` says `skip_unit_rescale = 0`.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::nvgpu::NVGPUDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect"];
}

#endif // FA_CONVERSION_PASSES_TD
