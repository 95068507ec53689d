# The HTML report's web assets, inlined into memsnap at build time so that the report stays one
# offline file: the chart library (uPlot, pinned in web/package.json + web/package-lock.json and
# installed by scripts/setup.sh with `npm ci` in web/) and the page's own script and styles
# (web/src/). cmake/embed_files.cmake turns them into one generated C++ source of byte arrays.
set(MEMSNAP_WEB_DIR ${PROJECT_SOURCE_DIR}/web)
set(MEMSNAP_UPLOT_DIR ${MEMSNAP_WEB_DIR}/node_modules/uplot)
if(NOT EXISTS ${MEMSNAP_UPLOT_DIR}/dist/uPlot.iife.min.js)
  message(FATAL_ERROR
    "web/node_modules/uplot is missing: run scripts/setup.sh (it runs `npm ci` in web/), "
    "or `npm ci --prefix web` by hand")
endif()
file(READ ${MEMSNAP_UPLOT_DIR}/package.json MEMSNAP_UPLOT_PACKAGE)
string(JSON MEMSNAP_UPLOT_VERSION GET "${MEMSNAP_UPLOT_PACKAGE}" version)

# The page's script, in this order (one scope: later files use earlier ones).
set(MEMSNAP_PAGE_SCRIPTS
    codec.js format.js dom.js ticks.js timeline.js segments.js segtimeline.js sites.js diff.js main.js)
list(TRANSFORM MEMSNAP_PAGE_SCRIPTS PREPEND ${MEMSNAP_WEB_DIR}/src/)

set(MEMSNAP_WEB_ASSETS_CPP ${CMAKE_BINARY_DIR}/generated/web_assets.cpp)
set(MEMSNAP_WEB_ASSET_INPUTS
    ${MEMSNAP_UPLOT_DIR}/dist/uPlot.iife.min.js ${MEMSNAP_UPLOT_DIR}/dist/uPlot.min.css
    ${MEMSNAP_UPLOT_DIR}/LICENSE ${MEMSNAP_WEB_DIR}/src/page.css ${MEMSNAP_PAGE_SCRIPTS})
add_custom_command(
  OUTPUT ${MEMSNAP_WEB_ASSETS_CPP}
  COMMAND ${CMAKE_COMMAND}
          "-DOUT=${MEMSNAP_WEB_ASSETS_CPP}"
          "-DLIBRARY_JS=${MEMSNAP_UPLOT_DIR}/dist/uPlot.iife.min.js"
          "-DLIBRARY_CSS=${MEMSNAP_UPLOT_DIR}/dist/uPlot.min.css"
          "-DLIBRARY_LICENSE=${MEMSNAP_UPLOT_DIR}/LICENSE"
          "-DLIBRARY_VERSION=uPlot ${MEMSNAP_UPLOT_VERSION}"
          "-DPAGE_CSS=${MEMSNAP_WEB_DIR}/src/page.css"
          "-DPAGE_SCRIPTS=${MEMSNAP_PAGE_SCRIPTS}"
          -P ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
  DEPENDS ${MEMSNAP_WEB_ASSET_INPUTS} ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
  COMMENT "Inlining the report's chart library and script (web/)"
  VERBATIM)
target_sources(memsnap_report PRIVATE ${MEMSNAP_WEB_ASSETS_CPP})
# Megabytes of string literals: compiled on its own, never inside a unity batch.
set_source_files_properties(${MEMSNAP_WEB_ASSETS_CPP} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
