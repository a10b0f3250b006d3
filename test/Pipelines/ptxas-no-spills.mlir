// REQUIRES: ptxas
// Every default configuration of the kernel library assembles for sm_90a
// without spilling registers to local memory, except the f32 attention
// backward kernels (three TF32 products per product do not fit in 255
// registers at any tile size; see kernels/CMakeLists.txt), which must still
// assemble. Every variant kernel, at every head dim, is among the checked.
// ptxas honours every setmaxnreg (no C7508: "'setmaxnreg' ignored").
// RUN: rm -rf %t && fa-opt %fa_obj_root/kernel-build/library.mlir --fa-to-ptx="export-dir=%t" -o /dev/null
// RUN: for f in %t/*.ptx; do case $f in *attention_bwd_f32*) continue;; esac; %ptxas -arch=sm_90a -v $f -o %t/out.cubin 2>&1 | grep -E "spill stores|Compiling entry|fatal|C7508"; done > %t/report.txt
// RUN: FileCheck %s < %t/report.txt
// RUN: not grep -E "[1-9][0-9]* bytes spill stores|fatal|C7508" %t/report.txt
// RUN: for f in %t/attention_bwd_f32*.ptx; do %ptxas -arch=sm_90a $f -o %t/out.cubin || echo "fatal: $f"; done > %t/f32.txt 2>&1
// RUN: not grep -E "fatal|error" %t/f32.txt
// CHECK: Compiling entry function 'attention_bwd_
// CHECK: 0 bytes spill stores
// CHECK: Compiling entry function 'attention_fwd_
// CHECK: 0 bytes spill stores
// CHECK: Compiling entry function 'layernorm_
// CHECK: 0 bytes spill stores
