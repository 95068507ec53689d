// LoadCudaDriver for builds without the CUDA toolkit: the backend is not compiled in, so the
// GPU replay says how to get it. With the toolkit, backend/cuda/driver_dlopen.cpp defines these.
#ifndef MEMSNAP_HAVE_CUDA

#include "memsnap/sim/cuda_driver.h"

namespace memsnap::sim {

namespace {
absl::Status NotBuilt() {
  return absl::FailedPreconditionError(
      "memsnap was built without CUDA; reconfigure with -DMEMSNAP_ENABLE_CUDA=ON on a machine "
      "with the CUDA toolkit");
}
}  // namespace

absl::StatusOr<std::unique_ptr<CudaDriver>> LoadCudaDriver() { return NotBuilt(); }

absl::StatusOr<std::unique_ptr<CudaDriver>> CudaDriverFromResolver(const SymbolResolver&) {
  return NotBuilt();
}

}  // namespace memsnap::sim

#endif  // MEMSNAP_HAVE_CUDA
