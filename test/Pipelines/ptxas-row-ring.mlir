// REQUIRES: ptxas
// fa-to-ptx-row-ring.mlir's kernel (cp.async rows into a ring slot, tracked
// by cp.async.mbarrier.arrive.noinc) assembles for sm_90a without spilling.
// RUN: fa-opt %S/fa-to-ptx-row-ring.mlir --fa-to-ptx -o %t.mlir
// RUN: python3 %fa_src_root/test/runtime/fixtures/extract_ptx.py %t.mlir %t.ptx
// RUN: %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin > %t.txt 2>&1
// RUN: FileCheck %s < %t.txt
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill stores|spill loads)|error" %t.txt
// CHECK: Compiling entry function 'row_ring' for 'sm_90a'
