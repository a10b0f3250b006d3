# Finds Debian's LLVM/MLIR 22 and loads MLIR's CMake helpers (TableGen, add_mlir_*).
# Compiler-only flags (LLVM's HandleLLVMOptions) are applied per directory through
# fa_apply_llvm_options() so that they never leak into the runtime.
if(NOT MLIR_DIR AND EXISTS /usr/lib/llvm-22/lib/cmake/mlir)
  set(MLIR_DIR /usr/lib/llvm-22/lib/cmake/mlir)
endif()
find_package(MLIR REQUIRED CONFIG)
message(STATUS "Using MLIRConfig.cmake in: ${MLIR_DIR}")
message(STATUS "Using LLVMConfig.cmake in: ${LLVM_DIR}")

list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
set(LLVM_RUNTIME_OUTPUT_INTDIR ${CMAKE_RUNTIME_OUTPUT_DIRECTORY})
set(LLVM_LIBRARY_OUTPUT_INTDIR ${CMAKE_LIBRARY_OUTPUT_DIRECTORY})
include(TableGen)
include(AddLLVM)
include(AddMLIR)

# mlir_target_link_libraries() links libMLIR.so instead of the static libraries
# when this is on (measured faster to build on 2 cores; see README).
set(MLIR_LINK_MLIR_DYLIB ${FA_LINK_MLIR_DYLIB})

set(FA_TOOLS_DIR ${CMAKE_RUNTIME_OUTPUT_DIRECTORY})

macro(fa_apply_llvm_options)
  include(HandleLLVMOptions)
  include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
  include_directories(${FA_SOURCE_DIR}/include ${FA_BINARY_DIR}/include)
  link_directories(${LLVM_BUILD_LIBRARY_DIR})
  add_definitions(${LLVM_DEFINITIONS})
endmacro()
