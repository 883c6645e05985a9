#pragma once
// What names this build of spreplay's compiler in the compile cache's keys.

#include <string_view>

namespace spreplay {

// The version and a digest of the sources the build was made from
// (cmake/SourceDigest.cmake). Every verdict the cache keeps (a kernel's
// proof, a module stage's outcome and evidence, a fatbin this code packed) is
// keyed on it: a build never trusts what another build decided, even one of
// the same version, as a development tree is at every commit.
std::string_view ToolIdentity();

}  // namespace spreplay
