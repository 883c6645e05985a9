#pragma once
// Which SM architectures the kernel about to be loaded must run on.
//
// Read through the CUDA driver API that slang-rhi already loaded; spreplay
// never initialises CUDA itself and never links against libcuda.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace spreplay {

// The arch (compute capability x 10, e.g. 90) of the current context's
// device; without a current context, the arch of every visible device, since
// the kernel could be loaded on any of them.
absl::StatusOr<std::vector<uint32_t>> ArchesToServe();

}  // namespace spreplay
