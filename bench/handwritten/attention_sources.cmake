# The hand-written attention kernels' sources, relative to this directory,
# compiled into fa-handwritten-kernels (CMakeLists.txt includes this file).
set(FA_HANDWRITTEN_ATTENTION_SOURCES
  attention_forward.cu
  attention_backward.cu)
