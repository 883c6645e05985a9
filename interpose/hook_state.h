#pragma once
// The state the Slang hooks share, and the helpers every hook uses. Internal
// to interpose/: slang_hooks.cc hooks Slang's calls, module_serving.cc serves
// modules from IR inside two of them.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/stderr_line.h"
#include "fmt/format.h"
#include "interpose/file_digests.h"
#include "interpose/hook_listener.h"
#include "interpose/module_cache.h"
#include "interpose/module_description.h"
#include "interpose/slang_hooks.h"
#include "interpose/slang_library.h"
#include "interpose/vtable_patch.h"
#include "slang.h"

namespace spreplay::hooks {

// The process-wide hook state. It must be global: the hooked methods are
// reached through Slang's vtables, with no place to carry a context pointer.
//
// The contract: `mutex` guards every member below it that changes after
// configuration. `options` is set once, by the first ConfigureSlangHooks,
// before any Slang object exists, and only read after; `listeners` is swapped
// atomically (see there). No lock is held while Slang or a listener runs.
struct HookState {
  std::mutex mutex;
  bool configured = false;
  HookOptions options;
  std::string toolchain;  // options.toolchain + Slang's build tag
  VtablePatcher patcher;
  FileDigests files;
  // Copy on write: AddHookListener publishes a new list, and a hook walks
  // the list it loaded (Listeners()), which lives as long as that walk, so
  // no lock is held while a listener runs. Listeners are never removed.
  std::atomic<std::shared_ptr<const std::vector<HookListener*>>> listeners{
      std::make_shared<const std::vector<HookListener*>>()};
  // What each component the hooks saw made contains, by the component, with
  // the session it belongs to. Each entry holds a reference to its component
  // (Track), until that session is let go (ForgetSession in slang_hooks.cc).
  struct TrackedComponent {
    ComponentPtr description;
    const void* session = nullptr;
  };
  absl::flat_hash_map<const void*, TrackedComponent> components;
  absl::flat_hash_map<const void*, std::shared_ptr<const SessionInfo>> sessions;
  // Modules loaded from strings, by the path Slang made up for them.
  absl::flat_hash_map<std::pair<const void*, std::string>, Digest> string_modules;
  // Modules served from IR, by (session, module name without ".slang"): what
  // their importers loaded from source must list (ServedImport).
  absl::flat_hash_map<std::pair<const void*, std::string>, ServedImport> served_imports;
  // What each file held when a session first read it, by (session, path).
  // Slang keeps modules loaded in a session: a later program importing them
  // uses what was read then, whatever the file holds now.
  absl::flat_hash_map<std::pair<const void*, std::string>, FileContent> session_files;
  // Type conformances created with an automatic id, by their description:
  // where to ask Slang which id it assigned.
  struct AutomaticConformance {
    ComponentPtr description;  // keeps the key's address from being reused
    slang::ISession* session = nullptr;
    slang::TypeReflection* type = nullptr;
    slang::TypeReflection* interface_type = nullptr;
  };
  absl::flat_hash_map<const Component*, AutomaticConformance> automatic_conformances;
  // Of each session created without the module cache sgl asked for
  // (module_cache.h), its twin: a session made from sgl's own description
  // (one reference, the hooks'), where the cache is judged and its entries
  // made, and that description's cache layout. Slang sessions take one
  // thread at a time: `use` serializes the hooks' calls into the twin.
  struct ModuleCacheTwin {
    slang::ISession* session = nullptr;
    ModuleCacheLayout layout;
    std::shared_ptr<std::mutex> use = std::make_shared<std::mutex>();
  };
  absl::flat_hash_map<const void*, ModuleCacheTwin> module_cache_twins;
  // The archived IR each module served into such a session was loaded from,
  // by the module, with its session: what its cache entry is made from.
  struct ServedIr {
    const void* session = nullptr;
    const void* ir = nullptr;  // alive for the process's life (a mapped archive)
    size_t size = 0;
  };
  absl::flat_hash_map<const void*, ServedIr> served_ir;
  uint64_t session_count = 0;
  // The app's Slang, whose C functions the hooks call without linking it;
  // its directory is slangpy's.
  SlangLibrary slang;
  HookCounts counts;
};

HookState& State();

// The listeners, as of now; safe against AddHookListener on another thread.
inline std::shared_ptr<const std::vector<HookListener*>> Listeners() {
  return State().listeners.load(std::memory_order_acquire);
}

// Runs a listener inside a Slang call. Nothing may unwind through Slang and
// slangpy: a listener that throws is reported, and the call goes on as if the
// listener had had no opinion.
template <typename Call>
void Notify(HookListener* listener, Call call) noexcept {
  try {
    call(*listener);
  } catch (const std::exception& error) {
    PrintLineToStderr(std::string("spreplay: internal error, ignored: ") + error.what());
  } catch (...) {
    PrintLineToStderr("spreplay: internal error, ignored");
  }
}

template <typename... Args>
void Log(fmt::format_string<Args...> format, Args&&... args) {
  if (!State().options.verbose) return;
  PrintLineToStderr("spreplay: " + fmt::format(format, std::forward<Args>(args)...));
}

void Count(uint64_t HookCounts::*counter);

// Tells the listeners the app asked `session` for `module`, which took
// `load_seconds`, if the hooks hold that session.
void NotifyModuleRequested(const void* session, const ComponentPtr& module, double load_seconds);

// Keeps `object` alive and remembers what it contains.
void Track(slang::IComponentType* object, ComponentPtr component);
// What the hooks know `object` contains; opaque if they never saw it made.
ComponentPtr Lookup(const void* object);
void PatchModule(slang::IModule* module);

// For a session created without the module cache (module_cache.h): the cache
// entry of a module loaded from `source_path`, if stock Slang would load it
// in the session sgl asked for (it is up to date).
std::optional<std::string> UpToDateModuleCacheEntry(const void* session,
                                                    const std::string& source_path);
// What IModule::serialize gives for `module` in the session sgl asked for,
// where its digest covers that session's options: the bytes stock slangpy
// writes into its module cache. None if `module` is not in a session
// created without the cache, or the twin could not make them.
// `serialize_here` serializes the module in its own session, for a module
// not served from IR.
std::optional<std::string> SerializeForModuleCache(
    slang::IModule* module, const std::function<std::optional<std::string>()>& serialize_here);

// Describes a module Slang just loaded by reading every file it depends on.
// A file that cannot be read makes the module opaque: we never serve code
// for content we could not see. False if the hooks knew it already. A module
// the app asked for (`requested_name` or `source`) took `load_seconds`.
bool DescribeModule(slang::IModule* module, const char* requested_name, const char* path,
                    std::optional<std::string> source, double load_seconds);

// A file as `session` first read it (Slang keeps what a session loaded).
absl::StatusOr<FileContent> SessionFile(const void* session, const std::string& path);
// The digest of a module `session` loaded from a string, by its path.
std::optional<Digest> StringModuleDigest(const void* session, const std::string& path);

}  // namespace spreplay::hooks
