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
    unless the kernel's `fa.tile` says `skip_unit_rescale = false`.

    With `wgmma = true` in the kernel's `fa.tile` (Hopper, sm_90a only), each
    4-warp group computes its 64 rows of every f16/bf16 product with
    `wgmma.mma_async`: shared operands through 128-byte-swizzle matrix
    descriptors (rows longer than 128 bytes stored as 128-byte panels), a
    register A operand in the same fragment layout as above. A product is
    issued where it stands and waited for (`wgmma.wait_group N`) just before
    its first use, with the products issued in between left pending.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "The GPU the kernels are for: kernels with wgmma = true need "
           "sm_90a">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::nvgpu::NVGPUDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect"];
}

def FAGridConstantParams : Pass<"fa-grid-constant-params"> {
  let summary = "Pass the kernels' tensor maps by value as __grid_constant__";
  let description = [{
    Runs after convert-gpu-to-nvvm. On each llvm.func that
    convert-fa-to-nvgpu marked with `fa.grid_constant_params` (the indices
    of its tensor-map parameters among the lowered ones), each listed
    `!llvm.ptr` parameter gets `llvm.byval = !llvm.array<128 x i8>`,
    `llvm.align = 64` and `nvvm.grid_constant`: in PTX a
    `.param .align 64 .b8 name[128]` parameter that the TMA instructions
    address in place (`cvta.param`), as CUDA C++ passes a
    `const __grid_constant__ CUtensorMap`. MLIR 22 cannot say this on a
    gpu.func (lib/Conversion/FAToNVGPU/AsyncRing.cpp says why).
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

def FAFastExp2 : Pass<"fa-fast-exp2"> {
  let summary = "Lower f32 math.exp2 to PTX's ex2.approx.ftz.f32";
  let description = [{
    Runs before convert-gpu-to-nvvm. Each f32 `math.exp2` marked
    `fastmath<afn>` (a scalar, or a vector element by element) becomes
    `llvm.nvvm.ex2.approx.ftz.f32`: one MUFU.EX2 in SASS. The tiling passes
    mark the softmax's exponentials: fa-fuse-online-softmax in warpgroup-MMA
    forward kernels, fa-tile-attention-grad the probabilities of a backward
    whose dK/dV kernel runs on two warpgroups without a variant. convert-gpu-to-nvvm would call libdevice's
    `__nv_exp2f`, whose `ex2.approx.f32` keeps subnormal results: ptxas
    wraps each exponential in a range test and two predicated multiplies,
    three extra instructions per score on the softmax's critical path. The
    flush changes only results below 2^-126 (they become 0) and subnormal
    inputs (read as 0): in a softmax both are far below what a bf16, f16
    or f32 output can hold next to the row's largest term, which is 1.
    Other exponentials keep libdevice.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::vector::VectorDialect"];
}

def ConvertFARowsToGPU : Pass<"convert-fa-rows-to-gpu"> {
  let summary = "Distribute the blocks of row-wise kernels over threads";
  let description = [{
    The thread-level lowering of the kernels `--fa-tile-layernorm` builds
    (those with an `fa.rows` configuration). Of an `R x C` block, each row
    gets `threads / R` consecutive threads (P), and thread `t` of a row owns
    the 8-column chunks `t, t + P, t + 2P, ...`: a row's threads read
    consecutive 16-byte pieces together, and each thread holds its share as
    one flat register vector. A per-column vector (`vector<C>`) has the same
    share in every row; a per-row vector (`vector<R>`) becomes one scalar.

    `fa.load_block` / `fa.store_block` become aligned vector accesses of
    whole chunks where the chunk lies inside the buffer and rows are 16-byte
    aligned, masked accesses otherwise. Row reductions reduce in registers,
    then across the row's threads with `gpu.shuffle xor`, then (more than a
    warp per row) across warps through shared memory. Column reductions
    combine the rows of a warp with shuffles, then the warps through shared
    memory. Elementwise `arith`/`math` and `scf.for` follow the type
    conversion.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect"];
}

#endif // FA_CONVERSION_PASSES_TD
