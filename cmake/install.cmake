# `cmake --install` and CPack: memsnap installs like any command-line tool.
#
#   bin/memsnap
#   share/man/man1/memsnap.1                        `memsnap help-man`
#   share/bash-completion/completions/memsnap       `memsnap completion bash`
#   share/doc/memsnap/{README.md,cli.md}
#
# The man page and the completion script are generated at build time by the binary just built,
# from the same command table as --help and docs/cli.md (src/cli/cli_docs.cpp), so none of them can
# drift. `cpack -G DEB` in the build folder makes memsnap_<version>_<arch>.deb; its Depends line
# comes from dpkg-shlibdeps (the Debian packages of the shared libraries memsnap links: Abseil,
# simdjson, zlib, the C++ runtime). scripts/install_check.sh exercises all of it in CI.
include(GNUInstallDirs)

set(MEMSNAP_MAN_PAGE ${PROJECT_BINARY_DIR}/memsnap.1)
set(MEMSNAP_COMPLETION ${PROJECT_BINARY_DIR}/memsnap.bash-completion)
add_custom_command(
  OUTPUT ${MEMSNAP_MAN_PAGE} ${MEMSNAP_COMPLETION}
  COMMAND memsnap help-man > ${MEMSNAP_MAN_PAGE}
  COMMAND memsnap completion bash > ${MEMSNAP_COMPLETION}
  DEPENDS memsnap
  COMMENT "Generating the man page and bash completion from the command table")
add_custom_target(memsnap_man ALL DEPENDS ${MEMSNAP_MAN_PAGE} ${MEMSNAP_COMPLETION})

install(TARGETS memsnap RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${MEMSNAP_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${MEMSNAP_COMPLETION} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME memsnap)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/cli.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(MEMSNAP_PACKAGE_MAINTAINER "memsnap maintainers <memsnap@localhost>" CACHE STRING
    "Maintainer field of the .deb (cpack -G DEB)")
set(CPACK_PACKAGE_NAME memsnap)
set(CPACK_PACKAGE_VENDOR memsnap)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "offline analyzer of PyTorch CUDA memory snapshots")
set(CPACK_PACKAGE_DESCRIPTION
    "memsnap reads the files torch.cuda.memory._dump_snapshot() writes (pickle, JSON, the HTML
of _memory_viz, gzip of any) and answers what was alive at the peak and who allocated it, diffs
two runs by allocation site, measures fragmentation, replays the trace through a simulator of
PyTorch's caching allocator under other settings, and gates CI on memory regressions.")
set(CPACK_PACKAGE_CONTACT "${MEMSNAP_PACKAGE_MAINTAINER}")
set(CPACK_STRIP_FILES ON)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # memsnap_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "bash-completion")
include(CPack)
