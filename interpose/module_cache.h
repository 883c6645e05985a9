#pragma once
// slangpy's module cache (Device's module_cache_path) as a Slang session
// shows it: the option UseUpToDateBinaryModule, and one directory
// "<module_cache_path>/<session uid>/<i>" per include path, ahead of them
// all, where sgl writes serialized modules and Slang looks for them first.
//
// Slang 2026.12 accepts a serialized module in such a session only if its
// digest (SHA-1 of Slang's build tag, the session's whole option set,
// absolute include paths included, and its files' contents) matches the one
// the module carries (slang-session.cpp, isBinaryModuleUpToDate), so it
// rejects every module an archive holds. A session whose modules spreplay
// serves is therefore created without the module cache. Beside it the hooks
// keep its twin, a session created from sgl's own description, which does
// three things for it:
//
// - judges a cache entry as stock Slang would (isBinaryModuleUpToDate);
// - makes the bytes stock Slang would have written for a module: Slang
//   recomputes a module's digest, from the session it lives in, when the
//   one it was loaded with is zero, and a module library (what
//   ICompileRequest::addLibraryReference takes) loads without the check. The
//   module, its digest zeroed, is loaded into the twin that way and
//   serialized there (IModule::serialize, as sgl does);
// - and so lets sgl's own cache writer, whose IModule::serialize the hooks
//   answer with those bytes, write the entries stock slangpy then loads.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "interpose/compiler_option.h"

namespace spreplay {

bool UsesModuleCache(const std::vector<CompilerOption>& options);

// `options` without UseUpToDateBinaryModule and the module cache's
// directories.
std::vector<CompilerOption> WithoutModuleCache(const std::vector<CompilerOption>& options);

// Where sgl keeps the serialized modules of files below each include path:
// (include path, its cache directory), in the include paths' order.
using ModuleCacheLayout = std::vector<std::pair<std::string, std::string>>;
ModuleCacheLayout ModuleCacheLayoutOf(const std::vector<CompilerOption>& options);

// The cache file sgl writes for a module loaded from `source_path`
// (SlangSession::write_module_to_cache): below the first include path that
// holds the file, the same relative path in that path's cache directory,
// extension ".slang-module". None for a file outside every include path,
// which sgl does not cache.
std::optional<std::string> ModuleCacheEntry(const ModuleCacheLayout& layout,
                                            const std::string& source_path);

// A serialized module (IModule::serialize's RIFF, or a compile request's
// module container) as a module library whose modules carry a zero digest;
// none if `serialized` is neither.
std::optional<std::string> AsModuleLibraryWithoutDigest(std::string_view serialized);

}  // namespace spreplay
