#pragma once
// The keys serialized modules are archived and found under. Both the
// compiler, which archives them, and the hooks, which find them, use these.

#include <string>
#include <string_view>

#include "common/sha256.h"
#include "interpose/component.h"

namespace spreplay {

// A module's IR in one session configuration of one toolchain: its content
// digest and the exact name it must be loaded under, which imports and
// mangled names refer to (the content digest leaves ".slang" out).
Digest IrModuleKey(std::string_view toolchain, const Digest& session, const Component& module);

// What a module loaded from a string is found by before Slang sees it: the
// arguments of loadModuleFromSourceString, exactly as passed.
Digest SourceModuleLookup(std::string_view toolchain, const Digest& session, std::string_view name,
                          std::string_view path, std::string_view text);

// Whether `path` is one Slang made up for a module loaded from a string
// without one: the SHA-1 of its text in lowercase hex.
bool IsPseudoPath(std::string_view path);

}  // namespace spreplay
