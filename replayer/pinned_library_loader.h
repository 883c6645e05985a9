#pragma once
// Slang loads NVRTC through its shared-library loader, passing a path it then
// decorates itself: "<dir>/nvrtc" becomes "<dir>/libnvrtc.so". NVIDIA's PyPI
// wheels ship NVRTC only as libnvrtc.so.13, which no such path names. The
// loader installed here answers Slang's request for one path with one exact
// file, and hands every other request to the loader Slang had.

#include <string>

#include "absl/status/status.h"
#include "slang.h"

namespace spreplay {

// From now on, when `session` asks to load `requested`, it gets `file`.
absl::Status PinSharedLibrary(slang::IGlobalSession* session, std::string requested,
                              std::string file);

}  // namespace spreplay
