#pragma once
// What the Slang hooks report to the rest of spreplay, and ask of it.

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/sha256.h"
#include "interpose/component.h"
#include "interpose/file_digests.h"
#include "interpose/session_config.h"

namespace spreplay {

struct SessionInfo {
  SessionConfig config;
  Digest digest;           // config.ContentDigest()
  Digest location_digest;  // config.LocationDigest()
  uint64_t ordinal = 0;    // order of creation in this process, for diagnostics
  // Created without the module cache sgl asked for (module_cache.h).
  bool without_module_cache = false;
};

// One request for target code: an entry point of a linked program.
struct KernelRequest {
  std::shared_ptr<const SessionInfo> session;
  ComponentPtr program;  // Kind::kLinked, or opaque when it was not tracked
  int64_t entry_point_index = 0;
  int64_t target_index = 0;
  Digest key;  // valid only when program->keyable
  std::string toolchain;
};

// Bytes to hand Slang's caller in place of compiled code. The owner keeps them
// alive for as long as the process may use them (an mmapped archive).
struct ServedKernel {
  const void* data = nullptr;
  size_t size = 0;
};

// What a listener decides about a kernel request.
enum class KernelDecision {
  kPass,    // no opinion: ask the next listener, or compile
  kServe,   // answer with `served` instead of compiling
  kRefuse,  // fail the request with `refusal` (strict mode)
};

// Every kernel request of the process, by outcome, and every module Slang
// loaded.
struct HookCounts {
  uint64_t served = 0;
  uint64_t compiled = 0;     // keyable, compiled by Slang
  uint64_t not_keyable = 0;  // compiled by Slang; content the hooks could not see
  uint64_t refused = 0;
  // Every module loaded from archived IR, imports included.
  uint64_t modules_served = 0;
  // Every module a request loaded through Slang's front end; modules Slang
  // imports along the way are out of the hooks' sight.
  uint64_t modules_compiled = 0;
  uint64_t modules_refused = 0;
};

// A module load the hooks are about to hand to Slang: ISession::loadModule
// (requested_name), or loadModuleFromSourceString (name, path, text).
struct ModuleLoadRequest {
  std::shared_ptr<const SessionInfo> session;
  std::string toolchain;
  std::string requested_name;
  std::optional<std::string_view> text;
  std::string name;
  std::string path;
  // For messages: the module as the app named it.
  std::string Label() const { return text ? name : requested_name; }
};

// One module to load from IR: the whole plan lists a module's imports
// first, the requested module last.
struct ModuleFromIr {
  std::string name;
  std::string path;          // "" for none
  const void* ir = nullptr;  // alive for the process's life (a mapped archive)
  size_t ir_size = 0;
  ComponentPtr description;  // as a load from source would describe it
  std::vector<FileContent> files;
  // The description's dependencies where they lie now, as Slang would list
  // them for a module importing this one from source.
  std::vector<SourceFile> local_dependencies;
};

// What the hooks read for a listener deciding about a module: a file by
// path (memoized per session), or a module loaded from a string, by the
// path Slang named it with.
struct ModuleFileReader {
  std::function<absl::StatusOr<FileContent>(const std::string& path)> file;
  std::function<std::optional<Digest>(const std::string& path)> string_module;
};

enum class ModuleDecision {
  kPass,    // load it from source
  kServe,   // load the plan from IR
  kRefuse,  // fail the load (strict mode)
};

class HookListener {
 public:
  virtual ~HookListener() = default;
  // Slang's global session exists; `toolchain` is what kernel keys carry.
  virtual void OnToolchainKnown(const std::string& toolchain, const std::string& slang_build_tag) {}
  virtual void OnSessionCreated(const SessionInfo& session) {}
  // A module Slang loaded, with the bytes of every file it read.
  virtual void OnModuleLoaded(const ComponentPtr& module, const std::vector<FileContent>& files) {}
  // The app asked `session` for `module` (ISession::loadModule or a load from
  // a string), which Slang loaded from source (after OnModuleLoaded) or the
  // hooks served, in `load_seconds` (the imports it loaded included).
  // Modules Slang loaded for an import were not asked for.
  virtual void OnModuleRequested(const SessionInfo& session, const std::string& toolchain,
                                 const ComponentPtr& module, double load_seconds) {}
  virtual KernelDecision DecideKernel(const KernelRequest& request, ServedKernel* served,
                                      std::string* refusal) {
    return KernelDecision::kPass;
  }
  virtual void OnKernelCompiled(const KernelRequest& request, const void* code, size_t size,
                                double seconds) {}
  // `plan` is set for kServe, and may list imports that can be served for a
  // kPass; `why` says why a kPass or kRefuse is not served.
  virtual ModuleDecision DecideModule(const ModuleLoadRequest& request,
                                      const ModuleFileReader& reader,
                                      std::vector<ModuleFromIr>* plan, std::string* why) {
    return ModuleDecision::kPass;
  }
  // Whether this listener serves modules of sessions of `session_digest`
  // (their content digest), which then run without slangpy's module cache
  // (module_cache.h).
  virtual bool ServesModulesOf(const Digest& session_digest) { return false; }
  // A module this listener passed on (kPass with `why`), or whose kServe plan
  // could not be carried out, is about to load from source: the refusal to
  // fail the load with instead (strict mode), or nullopt.
  virtual std::optional<std::string> RefuseUnservedModule(const ModuleLoadRequest& request,
                                                          const std::string& why) {
    return std::nullopt;
  }
  // It loaded from source.
  virtual void OnModuleNotServed(const ModuleLoadRequest& request, const std::string& why) {}
};

}  // namespace spreplay
