// REQUIRES: ptxas
// The Philox fixture kernels (fa.philox, and fa.apply_dropout plain and
// transposed on two warps of two row blocks) compile through fa-to-ptx and
// assemble for sm_90a without spilling registers to local memory.
// RUN: fa-opt %fa_src_root/test/runtime/fixtures/PhiloxFixture.mlir --fa-to-ptx -o %t.mlir
// RUN: python3 %fa_src_root/test/runtime/fixtures/extract_ptx.py %t.mlir %t.ptx
// RUN: %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin > %t.txt 2>&1
// RUN: FileCheck %s < %t.txt
// RUN: not grep -E "[1-9][0-9]* bytes spill stores|error" %t.txt
// CHECK-DAG: Compiling entry function 'philox_dropout_bits'
// CHECK-DAG: Compiling entry function 'dropout_tile'
// CHECK-DAG: Compiling entry function 'dropout_tile_transposed'
