// REQUIRES: ptxas
// Every default configuration of the kernel library assembles for sm_90a
// without spilling registers to local memory.
// RUN: rm -rf %t && fa-opt %fa_obj_root/kernel-build/library.mlir --fa-to-ptx="export-dir=%t" -o /dev/null
// RUN: for f in %t/*.ptx; do %ptxas -arch=sm_90a -v $f -o %t/out.cubin 2>&1 | grep -E "spill stores|Compiling entry|fatal"; done > %t/report.txt
// RUN: FileCheck %s < %t/report.txt
// RUN: not grep -E "[1-9][0-9]* bytes spill stores|fatal" %t/report.txt
// CHECK: Compiling entry function 'attention_fwd_
// CHECK: 0 bytes spill stores
