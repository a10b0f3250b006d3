// Each kernel's shared tiles against the static shared memory of the chip
// (fa/Target/Chips.h: 227 KiB on sm_90a, 48 KiB without an "a" target). Past
// it the PTX was written and ptxas refused it later ("uses too much shared
// data"), or the kernel was silently built for a GPU it cannot run on.
// RUN: not fa-opt %s --fa-to-ptx="block-n=256 num-stages=2" 2>&1 | FileCheck %s --check-prefix=SM90A
// RUN: not fa-opt %s --fa-to-ptx="chip=sm_80 block-m=128 num-warps=8 num-stages=2" 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: fa-opt %s --fa-to-ptx="chip=sm_80 block-n=32 num-stages=1" -o /dev/null
// RUN: not fa-opt %s --fa-tile-attention="block-n=256 num-stages=2" 2>&1 | FileCheck %s --check-prefix=ANY
// RUN: not fa-opt %s --fa-tile-attention="chip=sm_8O" 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not fa-opt %s --fa-tile-attention-grad="block-m=256 block-n=128 num-warps=16 chip=sm_90a" 2>&1 | FileCheck %s --check-prefix=GRAD-SM90A
// RUN: not fa-opt %s --fa-tile-attention-grad="block-m=128 num-warps=8 chip=sm_80" 2>&1 | FileCheck %s --check-prefix=GRAD-SM80

// SM90A: error: fa-tile-attention: the kernel's shared tiles take 262144 bytes of static shared memory (K and V: 2 x 256 x 128 bf16 each), more than the 232448 bytes a block of sm_90a may use; use smaller tiles or fewer stages
// SM80: error: fa-tile-attention: the kernel's shared tiles take 65536 bytes of static shared memory (K and V: 2 x 64 x 128 bf16 each), more than the 49152 bytes a block of sm_80 may use
// GRAD-SM90A: error: fa-tile-attention-grad: the dK/dV kernel's shared tiles take 264192 bytes of static shared memory (K and V: 256 x 128 bf16 each, Q and dO: 2 x 128 x 128 each, lse and delta: 2 x 128 f32 each), more than the 232448 bytes a block of sm_90a may use
// GRAD-SM80: error: fa-tile-attention-grad: the dK/dV kernel's shared tiles take 132096 bytes of static shared memory (K and V: 128 x 128 bf16 each, Q and dO: 2 x 64 x 128 each, lse and delta: 2 x 64 f32 each), more than the 49152 bytes a block of sm_80 may use
// ANY: error: fa-tile-attention: the kernel's shared tiles take 262144 bytes of static shared memory (K and V: 2 x 256 x 128 bf16 each), more than the 232448 bytes a block of any supported chip may use
// CHIP: error: fa-tile-attention: unsupported chip 'sm_8O' (supported: sm_80,
!t = memref<?x?x?x128xbf16>
!s = memref<?x?x?xf32>
func.func @fwd(%q: !t, %k: !t, %v: !t, %o: !t) {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t)
  return
}

func.func @bwd(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t)
  return
}
