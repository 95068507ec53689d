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
    target_sources(memsnap_core PRIVATE ${MEMSNAP_CUDA_SOURCES})
    # Headers only: the driver is dlopen'ed (dl comes from CMAKE_DL_LIBS on memsnap_core).
    set_source_files_properties(${MEMSNAP_CUDA_SOURCES} PROPERTIES
                                INCLUDE_DIRECTORIES "${MEMSNAP_CUDA_H}")
    target_compile_definitions(memsnap_core PUBLIC MEMSNAP_HAVE_CUDA=1)
    set(MEMSNAP_HAVE_CUDA ON)
    message(STATUS "memsnap: CUDA replay backend ON (CUDA ${CUDAToolkit_VERSION}, ${MEMSNAP_CUDA_H}/cuda.h; driver loaded at run time)")
  else()
    message(STATUS "memsnap: CUDA replay backend OFF (no CUDA toolkit / cuda.h found)")
  endif()
else()
  message(STATUS "memsnap: CUDA replay backend OFF (MEMSNAP_ENABLE_CUDA=OFF)")
endif()
