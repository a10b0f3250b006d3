// REQUIRES: ptxas
// fa-to-ptx-global-accumulate.mlir's kernel assembles: the inline
// red.global.add.v2.f32 for sm_100a (PTX 8.6), the scalar atomics for sm_90a.
// RUN: fa-opt %S/fa-to-ptx-global-accumulate.mlir --fa-to-ptx -o %t.sm_90a.mlir
// RUN: python3 %fa_src_root/test/runtime/fixtures/extract_ptx.py %t.sm_90a.mlir %t.sm_90a.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.ptx -o %t.sm_90a.cubin > %t.sm_90a.txt 2>&1
// RUN: FileCheck %s < %t.sm_90a.txt
// RUN: fa-opt %S/fa-to-ptx-global-accumulate.mlir --fa-to-ptx="chip=sm_100a" -o %t.sm_100a.mlir
// RUN: python3 %fa_src_root/test/runtime/fixtures/extract_ptx.py %t.sm_100a.mlir %t.sm_100a.ptx
// RUN: %ptxas -arch=sm_100a -v %t.sm_100a.ptx -o %t.sm_100a.cubin > %t.sm_100a.txt 2>&1
// RUN: FileCheck %s < %t.sm_100a.txt
// RUN: not grep -E "[1-9][0-9]* bytes spill stores|error" %t.sm_90a.txt %t.sm_100a.txt
// CHECK: Compiling entry function 'dq_turn'
