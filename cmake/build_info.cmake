# What `memsnap --version` says about the binary (src/util/build_info.cpp): the version, `git
# describe` of the checkout it was built from (when there is one), the build type, the compiler,
# the sanitizers and whether the CUDA replay backend is in. Only build_info.cpp sees these, so a
# new commit recompiles one file.
set(MEMSNAP_GENERATED_DIR ${PROJECT_BINARY_DIR}/generated)

set(MEMSNAP_BUILD_SANITIZERS "")
if(MEMSNAP_ENABLE_ASAN)
  list(APPEND MEMSNAP_BUILD_SANITIZERS address)
endif()
if(MEMSNAP_ENABLE_UBSAN)
  list(APPEND MEMSNAP_BUILD_SANITIZERS undefined)
endif()
if(MEMSNAP_ENABLE_FUZZ)
  list(APPEND MEMSNAP_BUILD_SANITIZERS fuzzer)
endif()
string(JOIN "+" MEMSNAP_BUILD_SANITIZERS ${MEMSNAP_BUILD_SANITIZERS})
if(NOT MEMSNAP_BUILD_SANITIZERS)
  set(MEMSNAP_BUILD_SANITIZERS none)
endif()
set(MEMSNAP_BUILD_TYPE "${CMAKE_BUILD_TYPE}")
if(NOT MEMSNAP_BUILD_TYPE)
  set(MEMSNAP_BUILD_TYPE "default")
endif()
set(MEMSNAP_BUILD_COMPILER "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}")
if(MEMSNAP_HAVE_CUDA)
  set(MEMSNAP_BUILD_CUDA 1)
else()
  set(MEMSNAP_BUILD_CUDA 0)
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/build_config.h.in
               ${MEMSNAP_GENERATED_DIR}/memsnap_build_config.h @ONLY)

# `git describe` is taken at build time, not configure time, so it follows new commits; the header
# is rewritten only when the text changes.
add_custom_target(memsnap_git_describe
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
          -DOUTPUT=${MEMSNAP_GENERATED_DIR}/memsnap_git_describe.h
          -P ${PROJECT_SOURCE_DIR}/cmake/git_describe.cmake
  BYPRODUCTS ${MEMSNAP_GENERATED_DIR}/memsnap_git_describe.h
  VERBATIM)
add_dependencies(memsnap_util memsnap_git_describe)
target_include_directories(memsnap_util PRIVATE ${MEMSNAP_GENERATED_DIR})
