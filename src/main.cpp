// memsnap: an offline analyzer of PyTorch CUDA memory snapshots. All logic lives in memsnap_core;
// this file only wires the command line and maps the outcome to an exit code.
#include <iostream>
#include <map>

#include "memsnap/cli/app.h"
#include "memsnap/util/memory.h"

int main(int argc, char** argv) {
  memsnap::KeepFreedMemory();
  return memsnap::cli::RunMain(argc, argv, std::cout, std::cerr);
}
