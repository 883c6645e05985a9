#pragma once
// Turns PTX into SASS (a cubin) for one GPU architecture, without a GPU.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace spreplay {

class SassBuilder {
 public:
  virtual ~SassBuilder() = default;
  // `ptx` without a trailing NUL. Thread-safe: the compiler calls it from
  // many threads at once.
  virtual absl::StatusOr<std::string> Build(std::string_view ptx, uint32_t arch) const = 0;
  // Names the tool and its version; part of the compile cache's keys, so a
  // toolkit upgrade rebuilds every cubin.
  virtual const std::string& identity() const = 0;
};

// `ptxas` from the CUDA toolkit, one process per build.
absl::StatusOr<std::unique_ptr<SassBuilder>> MakePtxasBuilder(const std::string& cuda_root);
// nvJitLink from the CUDA toolkit, in-process.
absl::StatusOr<std::unique_ptr<SassBuilder>> MakeNvJitLinkBuilder(const std::string& cuda_root);

// $CUDA_HOME, $CUDA_PATH, or /usr/local/cuda, whichever holds bin/ptxas.
std::string FindCudaRoot();

}  // namespace spreplay
