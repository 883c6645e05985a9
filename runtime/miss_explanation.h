#pragma once
// Says why a kernel the app asked for is not in the archive, by comparing it
// with the archived build of the same call site, if there is one: which
// source files changed, or whether the session options or the toolchain did.

#include <optional>
#include <string>

#include "archive/archive.h"
#include "interpose/hook_listener.h"

namespace spreplay {

// How slangpy's Python layer names a call site.
struct CallSiteName {
  std::string module;
  std::string function;
  std::string kind;  // "call", "bwds", ...
  std::string Label() const { return module + "." + function + " (" + kind + ")"; }
};

// Why `spreplay compile` could not build `key`, if the archive lists it so.
std::optional<std::string> UnbuiltReason(const Archive& archive, const Digest& key);

// `name`, when known, finds the archived build of the same call site even if
// slangpy named its wrapper differently (the wrapper text names imported
// modules by path, so moving the app renames every wrapper).
std::string ExplainMiss(const Archive& archive, const KernelRequest& request,
                        const CallSiteName* name);

// The names of the modules loaded from strings in `program`: slangpy names
// each wrapper module after its call site's hash.
std::vector<std::string> WrapperModuleNames(const ComponentPtr& program);

}  // namespace spreplay
