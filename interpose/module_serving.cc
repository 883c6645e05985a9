#include "interpose/module_serving.h"

#include <chrono>
#include <fstream>
#include <functional>
#include <iterator>

#include "common/contained_call.h"
#include "common/fmt_absl.h"
#include "common/seconds_since.h"
#include "interpose/blobs.h"
#include "interpose/hook_state.h"
#include "interpose/module_cache.h"

namespace spreplay::hooks {
namespace {

using slang::IModule;
using slang::ISession;

// The module of `session` named `name`, if Slang has one.
IModule* LoadedModuleNamed(ISession* session, const std::string& name) {
  for (SlangInt i = 0; i < session->getLoadedModuleCount(); ++i) {
    IModule* module = session->getLoadedModule(i);
    if (module && module->getName() && name == module->getName()) return module;
  }
  return nullptr;
}

// The module of `session` Slang loaded from the file at `path`, under
// whatever name: `import helper;` names it "helper", loadModule("helper.slang")
// "helper.slang". Slang keys the modules it holds by path as well as by name.
IModule* LoadedModuleAt(ISession* session, const std::string& path) {
  if (path.empty()) return nullptr;
  for (SlangInt i = 0; i < session->getLoadedModuleCount(); ++i) {
    IModule* module = session->getLoadedModule(i);
    if (module && module->getFilePath() && path == module->getFilePath()) return module;
  }
  return nullptr;
}

// Whether Slang holds the module `requested` names: "user" and "user.slang"
// both name a module Slang called "user".
bool HoldsModuleRequestedAs(ISession* session, const std::string& requested) {
  return LoadedModuleNamed(session, requested) ||
         LoadedModuleNamed(session, std::string(WithoutSlangExtension(requested)));
}

// The content digest of a module Slang holds, describing it first if the
// hooks never saw it (Slang loaded it for an import).
std::optional<Digest> LoadedModuleDigest(IModule* module) {
  {
    std::lock_guard lock(State().mutex);
    if (auto it = State().components.find(module); it != State().components.end())
      return it->second.description->keyable ? std::optional<Digest>(it->second.description->digest)
                                             : std::nullopt;
  }
  DescribeModule(module, nullptr, nullptr, std::nullopt, /*load_seconds=*/0);
  const ComponentPtr described = Lookup(module);
  return described->keyable ? std::optional<Digest>(described->digest) : std::nullopt;
}

// Loads `plan`'s modules from IR, skipping those Slang already holds with
// the same content; the last is the requested module. Fails, leaving the
// modules loaded so far (content-checked, as the plan requires), when a
// module is loaded with other content or Slang rejects the IR.
absl::StatusOr<IModule*> LoadPlan(ISession* session, const SessionInfo& info,
                                  const std::vector<ModuleFromIr>& plan) {
  IModule* last = nullptr;
  for (const ModuleFromIr& step : plan) {
    if (IModule* at = step.description->source ? nullptr : LoadedModuleAt(session, step.path);
        at && at->getName() && step.name != at->getName()) {
      // Slang would assert that it holds the path already; and the IR of the
      // modules importing this one names it `step.name`, which that module
      // does not resolve (unresolved external symbols at codegen).
      return absl::FailedPreconditionError(
          fmt::format("the session holds {} as module '{}', which the IR names '{}'", step.path,
                      at->getName(), step.name));
    }
    if (IModule* loaded = LoadedModuleNamed(session, step.name)) {
      if (LoadedModuleDigest(loaded) != step.description->digest) {
        return absl::FailedPreconditionError(
            fmt::format("the session already holds a module '{}' with other content", step.name));
      }
      last = loaded;
      continue;
    }
    ISlangBlob* ir = NewBorrowedBlob(step.ir, step.ir_size);
    ISlangBlob* diagnostics = nullptr;
    // In a session created without the module cache, a module whose cache
    // entry stock Slang would load is given that entry's path, as Slang gives
    // it: sgl then writes no entry for it. Any other keeps its source's path,
    // and sgl writes its entry, as after a load from source (HookSerialize).
    std::string path = step.path;
    if (info.without_module_cache && !step.description->source) {
      if (std::optional<std::string> entry = UpToDateModuleCacheEntry(session, step.path))
        path = *std::move(entry);
    }
    // What Slang throws here would otherwise reach the app through sgl; the
    // module then loads from source, as it does stock.
    absl::StatusOr<IModule*> from_ir = Contained(
        fmt::format("loading module '{}' from IR", step.name), [&]() -> absl::StatusOr<IModule*> {
          return session->loadModuleFromIRBlob(
              step.name.c_str(), path.empty() ? nullptr : path.c_str(), ir, &diagnostics);
        });
    ir->release();
    const std::string said = BlobToString(diagnostics);
    if (diagnostics) diagnostics->release();
    if (!from_ir.ok()) return from_ir.status();
    IModule* module = *from_ir;
    if (!module) {
      return absl::InternalError(
          fmt::format("Slang could not load module '{}' from its IR: {}", step.name, said));
    }
    PatchModule(module);
    Track(module, step.description);
    if (info.without_module_cache) {
      std::lock_guard lock(State().mutex);
      State().served_ir[module] = {session, step.ir, step.ir_size};
    }
    Count(&HookCounts::modules_served);
    Log("module {} served from IR ({} bytes)", step.name, step.ir_size);
    {
      std::lock_guard lock(State().mutex);
      const void* owner = session;
      ServedImport& served =
          State()
              .served_imports[std::make_pair(owner, std::string(WithoutSlangExtension(step.name)))];
      if (step.description->source) {
        State().string_modules[std::make_pair(owner, step.description->path)] =
            step.description->digest;
        served.files = {{step.description->path, step.description->digest}};
      } else {
        served.files = step.local_dependencies;
      }
    }
    for (HookListener* listener : *Listeners())
      Notify(listener, [&](HookListener& it) { it.OnModuleLoaded(step.description, step.files); });
    last = module;
  }
  return last;
}

// A file's bytes; none if it cannot be read.
std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::nullopt;
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) return std::nullopt;
  return bytes;
}

std::optional<HookState::ModuleCacheTwin> TwinOf(const void* session) {
  std::lock_guard lock(State().mutex);
  auto it = State().module_cache_twins.find(session);
  if (it == State().module_cache_twins.end()) return std::nullopt;
  return it->second;
}

}  // namespace

std::optional<std::string> UpToDateModuleCacheEntry(const void* session,
                                                    const std::string& source_path) {
  const std::optional<HookState::ModuleCacheTwin> twin = TwinOf(session);
  if (!twin) return std::nullopt;
  std::optional<std::string> entry = ModuleCacheEntry(twin->layout, source_path);
  if (!entry) return std::nullopt;
  const std::optional<std::string> bytes = ReadFile(*entry);
  if (!bytes) return std::nullopt;
  std::lock_guard use(*twin->use);
  absl::StatusOr<bool> up_to_date = Contained(
      fmt::format("checking module cache entry {}", *entry), [&]() -> absl::StatusOr<bool> {
        ISlangBlob* blob = NewBorrowedBlob(bytes->data(), bytes->size());
        const bool result = twin->session->isBinaryModuleUpToDate(entry->c_str(), blob);
        blob->release();
        return result;
      });
  if (!up_to_date.ok()) Log("{}", up_to_date.status().message());
  if (!up_to_date.ok() || !*up_to_date) return std::nullopt;
  return entry;
}

std::optional<std::string> SerializeForModuleCache(
    IModule* module, const std::function<std::optional<std::string>()>& serialize_here) {
  const void* session = module->getSession();
  const std::optional<HookState::ModuleCacheTwin> twin = TwinOf(session);
  if (!twin) return std::nullopt;
  HookState::ServedIr served;
  {
    std::lock_guard lock(State().mutex);
    if (auto it = State().served_ir.find(module); it != State().served_ir.end())
      served = it->second;
  }
  const std::string name = module->getName() ? module->getName() : "";
  // A served module from the IR the archive verified; any other as Slang
  // serializes it here.
  std::optional<std::string> here;
  if (!served.ir) {
    here = serialize_here();
    if (!here) return std::nullopt;
  }
  const std::optional<std::string> library = AsModuleLibraryWithoutDigest(
      served.ir ? std::string_view(static_cast<const char*>(served.ir), served.size)
                : std::string_view(*here));
  if (!library) {
    Log("module {}: not a serialized module spreplay can read; its cache entry is Slang's own",
        name);
    return std::nullopt;
  }
  const char* file = module->getFilePath();
  const std::optional<std::string> entry = ModuleCacheEntry(twin->layout, file ? file : "");
  std::lock_guard use(*twin->use);
  absl::StatusOr<std::string> made = Contained(
      fmt::format("making the module cache entry of module '{}'", name),
      [&]() -> absl::StatusOr<std::string> {
        IModule* in_twin = LoadedModuleNamed(twin->session, name);
        if (!in_twin) {
          slang::ICompileRequest* request = nullptr;
          if (SLANG_FAILED(twin->session->createCompileRequest(&request)) || !request)
            return absl::InternalError("Slang could not create a compile request");
          const SlangResult added =
              request->addLibraryReference("", library->data(), library->size());
          request->release();
          if (SLANG_FAILED(added))
            return absl::InternalError("Slang could not load the module as a module library");
          in_twin = LoadedModuleNamed(twin->session, name);
          if (!in_twin) return absl::InternalError("the module library did not hold the module");
        }
        // The twin is no session of the hooks': this is Slang's own serialize.
        ISlangBlob* blob = nullptr;
        if (SLANG_FAILED(in_twin->serialize(&blob)) || !blob)
          return absl::InternalError("Slang could not serialize the module");
        std::string bytes = BlobToString(blob);
        blob->release();
        // Only an entry stock Slang would load back.
        if (entry) {
          ISlangBlob* check = NewBorrowedBlob(bytes.data(), bytes.size());
          const bool up_to_date = twin->session->isBinaryModuleUpToDate(entry->c_str(), check);
          check->release();
          if (!up_to_date)
            return absl::FailedPreconditionError("Slang would not load the entry back");
        }
        return bytes;
      });
  if (!made.ok()) {
    Log("module {}: no module cache entry made: {}", name, made.status().message());
    return std::nullopt;
  }
  Log("module {}: module cache entry made in the session sgl asked for ({} bytes)", name,
      made->size());
  return *std::move(made);
}

ModuleServing ServeModule(ISession* session, ModuleLoadRequest& request, ISlangBlob** diagnostics) {
  ModuleServing serving;
  {
    std::lock_guard lock(State().mutex);
    auto it = State().sessions.find(session);
    if (it == State().sessions.end()) return serving;
    request.session = it->second;
    request.toolchain = State().toolchain;
  }
  ModuleFileReader reader;
  reader.file = [session](const std::string& path) { return SessionFile(session, path); };
  reader.string_module = [session](const std::string& path) {
    return StringModuleDigest(session, path);
  };
  for (HookListener* listener : *Listeners()) {
    std::vector<ModuleFromIr> plan;
    std::string why;
    ModuleDecision decision = ModuleDecision::kPass;
    Notify(listener,
           [&](HookListener& it) { decision = it.DecideModule(request, reader, &plan, &why); });
    switch (decision) {
      case ModuleDecision::kPass:
        if (!plan.empty()) {
          if (absl::StatusOr<IModule*> imports = LoadPlan(session, *request.session, plan);
              !imports.ok())
            Log("imports of module {} not served: {}", request.Label(), imports.status().message());
        }
        if (!why.empty() && !serving.listener)
          serving = {ModuleServing::kLoadFromSource, nullptr, listener, why};
        continue;
      case ModuleDecision::kRefuse:
        // Asking again for a module Slang holds is no load.
        if (!request.text && HoldsModuleRequestedAs(session, request.requested_name)) return {};
        Count(&HookCounts::modules_refused);
        if (diagnostics) *diagnostics = NewOwnedBlob(why + "\n");
        return {ModuleServing::kRefused, nullptr, listener, why};
      case ModuleDecision::kServe: {
        const auto start = std::chrono::steady_clock::now();
        absl::StatusOr<IModule*> loaded = LoadPlan(session, *request.session, plan);
        if (loaded.ok() && *loaded) {
          // The plan's last is the module asked for.
          NotifyModuleRequested(session, plan.back().description, SecondsSince(start));
          return {ModuleServing::kServed, *loaded, listener, ""};
        }
        const std::string failure =
            loaded.ok() ? "the plan was empty" : std::string(loaded.status().message());
        std::optional<std::string> refusal;
        Notify(listener,
               [&](HookListener& it) { refusal = it.RefuseUnservedModule(request, failure); });
        if (refusal) {
          Count(&HookCounts::modules_refused);
          if (diagnostics) *diagnostics = NewOwnedBlob(*refusal + "\n");
          return {ModuleServing::kRefused, nullptr, listener, *refusal};
        }
        return {ModuleServing::kLoadFromSource, nullptr, listener, failure};
      }
    }
  }
  return serving;
}

void ReportNotServed(const ModuleServing& serving, const ModuleLoadRequest& request,
                     bool loaded_new_module) {
  if (!loaded_new_module) return;
  Count(&HookCounts::modules_compiled);
  if (!serving.listener || serving.why.empty()) return;
  Log("module {} loaded from source: {}", request.Label(), serving.why);
  Notify(serving.listener, [&](HookListener& it) { it.OnModuleNotServed(request, serving.why); });
}

}  // namespace spreplay::hooks
