# Optional CUDA replay backend (`memsnap replay --backend cuda`).
#
# Only cuda.h is needed at build time: the driver (libcuda.so.1) is loaded with dlopen at run
# time, so memsnap never links libcuda or libcudart and starts on machines without a driver.
# Without a toolkit (or with -DMEMSNAP_ENABLE_CUDA=OFF) the backend is left out and
# `--backend cuda` explains how to get it.
set(MEMSNAP_HAVE_CUDA OFF)
if(MEMSNAP_ENABLE_CUDA)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    find_path(MEMSNAP_CUDA_H cuda.h HINTS ${CUDAToolkit_INCLUDE_DIRS} NO_DEFAULT_PATH)
  endif()
  if(MEMSNAP_CUDA_H)
    file(GLOB MEMSNAP_CUDA_SOURCES CONFIGURE_DEPENDS
         ${PROJECT_SOURCE_DIR}/src/sim/backend/cuda/*.cpp)
    target_sources(memsnap_sim PRIVATE ${MEMSNAP_CUDA_SOURCES})
    # Headers only: the driver is dlopen'ed (dl comes from CMAKE_DL_LIBS on memsnap_sim).
    set_source_files_properties(${MEMSNAP_CUDA_SOURCES} PROPERTIES
                                INCLUDE_DIRECTORIES "${MEMSNAP_CUDA_H}")
    target_compile_definitions(memsnap_sim PUBLIC MEMSNAP_HAVE_CUDA=1)
    # For the tests' fake entry points, which must have cuda.h's exact function types.
    target_include_directories(memsnap_core SYSTEM INTERFACE ${MEMSNAP_CUDA_H})
    set(MEMSNAP_HAVE_CUDA ON)
    # A CPU-only libcuda.so.1 (tests/fake_libcuda/) runs the real dlopen path end to end in CI.
    if(MEMSNAP_BUILD_TESTS)
      add_library(memsnap_fake_libcuda SHARED ${PROJECT_SOURCE_DIR}/tests/fake_libcuda/fake_libcuda.c)
      set_target_properties(memsnap_fake_libcuda PROPERTIES
        OUTPUT_NAME cuda SOVERSION 1
        LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/fake_libcuda)
      target_include_directories(memsnap_fake_libcuda PRIVATE ${MEMSNAP_CUDA_H})
      find_package(Python3 COMPONENTS Interpreter REQUIRED)
      enable_testing()
      add_test(NAME cuda/fake_libcuda
               COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/fake_libcuda/run.py
                       $<TARGET_FILE:memsnap> ${PROJECT_BINARY_DIR}/fake_libcuda ${PROJECT_SOURCE_DIR})
      add_test(NAME cuda/fake_libcuda_corpus
               COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/fake_libcuda/corpus.py
                       $<TARGET_FILE:memsnap> ${PROJECT_BINARY_DIR}/fake_libcuda ${MEMSNAP_CORPUS_DIR})
      # Skipped (77), not passed, without the corpus (tests/CMakeLists.txt).
      set_tests_properties(cuda/fake_libcuda_corpus PROPERTIES SKIP_RETURN_CODE 77 LABELS corpus)
      # Where a driver loads, the unit case of the no-driver path cannot run: it must say that it
      # skipped, never pass silently (docs/coding-guidelines.md §10). The fake driver makes one.
      add_test(NAME cuda/no_driver_case_skips_with_a_driver
               COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${PROJECT_BINARY_DIR}/fake_libcuda
                       $<TARGET_FILE:memsnap_tests> "-tc=without a usable driver*")
      set_tests_properties(cuda/no_driver_case_skips_with_a_driver PROPERTIES
                           PASS_REGULAR_EXPRESSION "test cases skipped: a CUDA driver is present")
    endif()
    message(STATUS "memsnap: CUDA replay backend ON (CUDA ${CUDAToolkit_VERSION}, ${MEMSNAP_CUDA_H}/cuda.h; driver loaded at run time)")
  else()
    message(STATUS "memsnap: CUDA replay backend OFF (no CUDA toolkit / cuda.h found)")
  endif()
else()
  message(STATUS "memsnap: CUDA replay backend OFF (MEMSNAP_ENABLE_CUDA=OFF)")
endif()
