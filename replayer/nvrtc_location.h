#pragma once
// Where the replayer finds NVRTC, which Slang runs to turn CUDA source into
// PTX. The NVRTC build is part of the toolchain: its version is written into
// every PTX file, so a replay only matches a recording made with the same one.

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "slang.h"

namespace spreplay {

// $CUDA_HOME/lib64, else /usr/local/cuda/lib64, whichever holds libnvrtc.so.
std::optional<std::string> DefaultNvrtcDirectory();

// The path to pass to IGlobalSession::setDownstreamCompilerPath for NVRTC.
// Slang dlopens that path after adding the platform's "lib" prefix and ".so"
// suffix to its file name, so it takes "<dir>/nvrtc", not the directory.
absl::StatusOr<std::string> NvrtcLibraryStem(const std::string& directory);

// NVRTC dlopens its builtins library by file name while it compiles, so the
// loader finds it only on its search path, which a toolkit elsewhere (CUDA
// from PyPI in a virtualenv) is not on: "failed to open
// libnvrtc-builtins.so.13.0". Loading the one in `directory` by path first
// makes that dlopen find it in the process by its soname. Loaded for the life
// of the process; OK when `directory` holds none (NVRTC then searches as usual).
absl::Status PreloadNvrtcBuiltins(const std::string& directory);

// Makes `session` compile CUDA with the NVRTC in `directory`: its builtins
// preloaded, then its path set.
absl::Status UseNvrtc(slang::IGlobalSession* session, const std::string& directory);

}  // namespace spreplay
