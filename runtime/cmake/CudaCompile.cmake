# Helpers that compile CUDA C++ with nvcc into files the runtime loads through
# the driver API (PTX, fatbin), so no target links the CUDA runtime library.

set(FA_CUDA_ARCH sm_90 CACHE STRING "GPU architecture for the runtime's own CUDA C++ kernels")

# fa_compile_cuda(<output> <source> <ptx|fatbin> [DEFINES <NAME=value>...]
#                 [OPTIONS <nvcc option>...])
function(fa_compile_cuda output source kind)
  cmake_parse_arguments(ARG "" "" "DEFINES;OPTIONS" ${ARGN})
  set(defines)
  foreach(define ${ARG_DEFINES})
    list(APPEND defines -D${define})
  endforeach()
  get_filename_component(name ${output} NAME)
  set(depfile ${CMAKE_CURRENT_BINARY_DIR}/${name}.d)
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -std=c++17 -O3 --${kind}
            -arch=${FA_CUDA_ARCH} ${defines} ${ARG_OPTIONS}
            --generate-dependencies-with-compile --dependency-output ${depfile}
            -o ${output} ${source}
    DEPENDS ${source}
    DEPFILE ${depfile}
    COMMENT "nvcc --${kind} ${source}"
    VERBATIM)
endfunction()

# fa_embed_file(<output.cpp> <input> <symbol>): defines
#   extern "C" const unsigned char <symbol>[];
# holding the input's bytes, 8-byte aligned as cuModuleLoadData wants.
function(fa_embed_file output input symbol)
  set(script ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/EmbedFile.cmake)
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${input} -DOUTPUT=${output}
            -DSYMBOL=${symbol} -P ${script}
    DEPENDS ${input} ${script}
    COMMENT "Embedding ${input}"
    VERBATIM)
endfunction()
