# The layers of docs/design.md ("Layers"), one static library each: memsnap_<layer> is built from
# src/<layer>/ (globbed, so a new file is picked up) with its public headers in
# include/memsnap/<layer>/, and linked only to the layers it may depend on. This list is the rule;
# docs/design.md's table must say the same (scripts/check_layers.py compares them).
#
# Linking alone cannot catch a wrong-direction include (every header sits under one include
# root), so scripts/check_layers.py reads every #include of src/ and include/ and fails the build,
# naming the file, the include and the rule, when a file reaches into a layer its own may not use.
# It runs before any layer compiles (each memsnap_<layer> depends on memsnap_check_layers) and
# again only when a source, a header, this file or docs/design.md changes.

# In dependency order: a layer may only depend on layers listed before it.
# `analysis` is five sub-layers, each its own library (a folder of src/analysis/ and of
# include/memsnap/analysis/), in the same order; a layer above may name `analysis` for all five.
set(MEMSNAP_LAYERS util io model parse writer sim analysis/timeline analysis/attribution
    analysis/sites analysis/allocator analysis/compose query report cli)
set(MEMSNAP_LAYER_DEPS_util "")
set(MEMSNAP_LAYER_DEPS_io util)
set(MEMSNAP_LAYER_DEPS_model util)
set(MEMSNAP_LAYER_DEPS_parse io model util)
set(MEMSNAP_LAYER_DEPS_writer io model util)
set(MEMSNAP_LAYER_DEPS_sim model util)
set(MEMSNAP_LAYER_DEPS_analysis/timeline sim model util)
set(MEMSNAP_LAYER_DEPS_analysis/attribution analysis/timeline sim model util)
set(MEMSNAP_LAYER_DEPS_analysis/sites analysis/attribution analysis/timeline sim model util)
set(MEMSNAP_LAYER_DEPS_analysis/allocator
    analysis/sites analysis/attribution analysis/timeline sim model util)
set(MEMSNAP_LAYER_DEPS_analysis/compose
    analysis/allocator analysis/sites analysis/attribution analysis/timeline sim model util)
set(MEMSNAP_LAYER_DEPS_query analysis sim parse model io util)
set(MEMSNAP_LAYER_DEPS_report query analysis sim model util)
set(MEMSNAP_LAYER_DEPS_cli report query analysis sim writer parse model io util)
# src/main.cpp, the executable's only file.
set(MEMSNAP_LAYER_DEPS_main cli util)

# Third-party libraries of each layer, beyond what every layer gets (memsnap_base).
set(MEMSNAP_LAYER_LIBS_util Threads::Threads)
set(MEMSNAP_LAYER_LIBS_io ZLIB::ZLIB)
set(MEMSNAP_LAYER_LIBS_parse simdjson::simdjson)
set(MEMSNAP_LAYER_LIBS_sim ${CMAKE_DL_LIBS})  # the CUDA driver is dlopen'ed (cmake/cuda_backend.cmake)
set(MEMSNAP_LAYER_LIBS_report nlohmann_json::nlohmann_json)
set(MEMSNAP_LAYER_LIBS_cli CLI11::CLI11 nlohmann_json::nlohmann_json)

# What every layer (and the tests, bench and fuzz targets through memsnap_core) compiles with.
add_library(memsnap_base INTERFACE)
target_compile_features(memsnap_base INTERFACE cxx_std_20)
target_include_directories(memsnap_base INTERFACE ${PROJECT_SOURCE_DIR}/include
                                                  ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(memsnap_base INTERFACE
  absl::status absl::statusor absl::strings absl::str_format absl::flat_hash_map absl::hash
  absl::span)

# The layer check: a stamp file rebuilt when any file it reads changes.
file(GLOB_RECURSE MEMSNAP_LAYER_CHECKED_FILES CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/src/*.cpp ${PROJECT_SOURCE_DIR}/src/*.h
     ${PROJECT_SOURCE_DIR}/include/*.h)
set(MEMSNAP_LAYER_RULES "")
foreach(layer ${MEMSNAP_LAYERS} main)
  string(JOIN "," deps ${MEMSNAP_LAYER_DEPS_${layer}})
  list(APPEND MEMSNAP_LAYER_RULES "--layer=${layer}:${deps}")
endforeach()
add_custom_command(
  OUTPUT ${PROJECT_BINARY_DIR}/check_layers.stamp
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check_layers.py
          --root=${PROJECT_SOURCE_DIR} ${MEMSNAP_LAYER_RULES}
  COMMAND ${CMAKE_COMMAND} -E touch ${PROJECT_BINARY_DIR}/check_layers.stamp
  DEPENDS ${PROJECT_SOURCE_DIR}/scripts/check_layers.py ${PROJECT_SOURCE_DIR}/cmake/layers.cmake
          ${PROJECT_SOURCE_DIR}/docs/design.md ${MEMSNAP_LAYER_CHECKED_FILES}
  COMMENT "Checking that every #include follows the layers of docs/design.md"
  VERBATIM)
add_custom_target(memsnap_check_layers ALL DEPENDS ${PROJECT_BINARY_DIR}/check_layers.stamp)

# Layers that also compile with -Wshadow -Wconversion (GCC's; clang's -Wconversion adds sign
# conversions, which no layer is clean of): the readers and the model, where every narrowing of a
# value from the input must be a checked one (util/narrow.h), and the layers below them. A layer
# joins the list once it compiles clean with them.
set(MEMSNAP_STRICT_LAYERS util io model parse writer)
set(MEMSNAP_STRICT_WARNINGS $<$<CXX_COMPILER_ID:GNU>:-Wshadow> $<$<CXX_COMPILER_ID:GNU>:-Wconversion>)

# The library of a layer: memsnap_<layer>, with "/" as "_" (memsnap_analysis_sites).
foreach(layer ${MEMSNAP_LAYERS})
  string(REPLACE "/" "_" target memsnap_${layer})
  set(MEMSNAP_LAYER_TARGET_${layer} ${target})
endforeach()
set(MEMSNAP_LAYER_TARGET_analysis memsnap_analysis)

foreach(layer ${MEMSNAP_LAYERS})
  set(target ${MEMSNAP_LAYER_TARGET_${layer}})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${layer}/*.cpp)
  # The CUDA backend's driver loader needs cuda.h: cmake/cuda_backend.cmake adds it when found.
  list(FILTER sources EXCLUDE REGEX "/src/sim/backend/cuda/")
  add_library(${target} STATIC ${sources})
  target_compile_options(${target} PRIVATE ${MEMSNAP_WARNINGS})
  if(MEMSNAP_PYTHON_BUILT)
    # The Python module (a shared object) links the layers: position-independent code, without
    # semantic interposition so that calls within the library still inline as in -fPIE code.
    set_property(TARGET ${target} PROPERTY POSITION_INDEPENDENT_CODE ON)
    target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-fno-semantic-interposition>)
  endif()
  if(layer IN_LIST MEMSNAP_STRICT_LAYERS)
    target_compile_options(${target} PRIVATE ${MEMSNAP_STRICT_WARNINGS})
  endif()
  set(deps "")
  foreach(dep ${MEMSNAP_LAYER_DEPS_${layer}})
    list(APPEND deps ${MEMSNAP_LAYER_TARGET_${dep}})
  endforeach()
  target_link_libraries(${target} PUBLIC memsnap_base ${deps} ${MEMSNAP_LAYER_LIBS_${layer}})
  add_dependencies(${target} memsnap_check_layers)
endforeach()

# `analysis` as one name: every sub-layer, for the layers above it.
add_library(memsnap_analysis INTERFACE)
target_link_libraries(memsnap_analysis INTERFACE memsnap_analysis_compose)

# Every layer, for the tests and the bench tools (which may use any of them).
add_library(memsnap_core INTERFACE)
foreach(layer ${MEMSNAP_LAYERS})
  target_link_libraries(memsnap_core INTERFACE ${MEMSNAP_LAYER_TARGET_${layer}})
endforeach()
