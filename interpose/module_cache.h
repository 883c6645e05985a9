#pragma once
// slangpy's module cache (Device's module_cache_path) as a Slang session
// shows it: the option UseUpToDateBinaryModule, and one directory
// "<module_cache_path>/<session uid>/<i>" per include path, ahead of them
// all, where sgl writes serialized modules and Slang looks for them first.
//
// Slang 2026.12 accepts a serialized module in such a session only if its
// digest was computed from that session's own option set, absolute include
// paths included (slang-session.cpp, isBinaryModuleUpToDate), so it rejects
// every module an archive holds. A session whose modules spreplay serves is
// therefore created without the module cache: its modules come from the
// archive, or from source; never from a cache file Slang did not check.

#include <string>
#include <vector>

#include "interpose/compiler_option.h"

namespace spreplay {

bool UsesModuleCache(const std::vector<CompilerOption>& options);

// `options` without UseUpToDateBinaryModule and the module cache's
// directories.
std::vector<CompilerOption> WithoutModuleCache(const std::vector<CompilerOption>& options);

// The path a module served from IR is given in such a session: its source's
// with sgl's cache extension, ".slang-module". sgl serializes every module of
// a session with a module cache into the cache, unless its path says it came
// from there; a served module must not be written (each process would pay a
// serialization, and overwrite entries that stock slangpy would then reject).
std::string ModuleCacheFileName(const std::string& source_path);

}  // namespace spreplay
