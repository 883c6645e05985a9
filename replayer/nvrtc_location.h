#pragma once
// Where the replayer finds NVRTC, which Slang runs to turn CUDA source into
// PTX. The NVRTC build is part of the toolchain: its version is written into
// every PTX file, so a replay only matches a recording made with the same one.

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace spreplay {

// $CUDA_HOME/lib64, else /usr/local/cuda/lib64, whichever holds libnvrtc.so.
std::optional<std::string> DefaultNvrtcDirectory();

// The path to pass to IGlobalSession::setDownstreamCompilerPath for NVRTC.
// Slang dlopens that path after adding the platform's "lib" prefix and ".so"
// suffix to its file name, so it takes "<dir>/nvrtc", not the directory.
absl::StatusOr<std::string> NvrtcLibraryStem(const std::string& directory);

}  // namespace spreplay
