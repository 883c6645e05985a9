#pragma once
// The Slang the replayer drives: the libslang-compiler of the slangpy that
// spreplay was built against, by its file name, which carries Slang's
// version. The dynamic loader finds it the way it finds the tool's own
// libraries: the tool's run path leads to slangpy installed beside spreplay,
// and the console script puts slangpy's directory on LD_LIBRARY_PATH wherever
// it is installed.

#include "absl/status/statusor.h"
#include "interpose/slang_library.h"

namespace spreplay {

// Loaded on the first call; every later call answers the same.
absl::StatusOr<const SlangLibrary*> ReplayerSlang();

}  // namespace spreplay
