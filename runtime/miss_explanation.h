#pragma once
// Says why a kernel the app asked for is not in the archive, by comparing it
// with the archived build of the same call site, if there is one: which
// source files changed, or whether the session options or the toolchain did.

#include <string>

#include "archive/archive.h"
#include "interpose/hook_listener.h"

namespace spreplay {

std::string ExplainMiss(const Archive& archive, const KernelRequest& request);

// The names of the modules loaded from strings in `program`: slangpy names
// each wrapper module after its call site's hash.
std::vector<std::string> WrapperModuleNames(const Component& program);

}  // namespace spreplay
