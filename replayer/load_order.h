#pragma once
// The order in which to load a recorded program's modules so that each one
// comes into being the way it did in the application.
//
// Order is observable: Slang names a module after the request that first
// loads it (loadModule("user.slang") makes a module "user.slang", an
// `import user` makes it "user"), the name is part of the module's digest and
// of mangled symbol names, and a module loaded from a string must exist
// before another module can import it.

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "interpose/component.h"

namespace spreplay {

// The path by which other modules' dependency lists name a module: the
// pseudo path of a string module, the canonical path of a file module.
using ModuleIdentity = std::function<std::string(const Component& module)>;

// The modules of `program` plus those of `string_modules` that they import
// (transitively), ordered so that:
//  - a module loaded from a string precedes the modules importing it;
//  - a file module loaded under its requested name precedes its importers,
//    while one that carries another name (it was first loaded by an import)
//    follows them;
//  - otherwise the order of first appearance in the tree (children in
//    order, each before its parent) holds.
absl::StatusOr<std::vector<ComponentPtr>> ModuleLoadOrder(
    const ComponentPtr& program, const std::vector<ComponentPtr>& string_modules,
    const ModuleIdentity& identity_of);

}  // namespace spreplay
