// fa-opt exits non-zero with a located diagnostic on malformed input, a
// failing verifier, and a missing file; it never crashes.
// RUN: not fa-opt %s 2>&1 | FileCheck %s --check-prefix=VERIFY
// RUN: not fa-opt %s.does-not-exist 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: printf 'func.func @f() {\n  fa.attention ins(\n' > %t.mlir
// RUN: not fa-opt %t.mlir 2>&1 | FileCheck %s --check-prefix=TRUNCATED

// VERIFY: not-fa-opt.mlir:[[@LINE+2]]:3: error: 'fa.attention' op expects query head_dim to be one of 32, 64, 96, 128, 256, got 48
func.func @f(%q: memref<1x1x8x48xf16>) {
  fa.attention ins(%q, %q, %q : memref<1x1x8x48xf16>, memref<1x1x8x48xf16>, memref<1x1x8x48xf16>) outs(%q : memref<1x1x8x48xf16>)
  return
}

// MISSING: cannot open input file
// TRUNCATED: .mlir:2:20: error: expected SSA operand
