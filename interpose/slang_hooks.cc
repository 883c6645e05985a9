#include "interpose/slang_hooks.h"

#include <chrono>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "build_info/slang_build.h"
#include "common/contained_call.h"
#include "common/fmt_absl.h"
#include "common/seconds_since.h"
#include "common/stderr_line.h"
#include "common/toolchain_name.h"
#include "common/working_directory.h"
#include "fmt/format.h"
#include "interpose/blobs.h"
#include "interpose/hook_state.h"
#include "interpose/module_cache.h"
#include "interpose/module_description.h"
#include "interpose/module_serving.h"
#include "interpose/vtable_patch.h"
#include "slang.h"

namespace spreplay {
namespace hooks {

using slang::IComponentType;
using slang::IEntryPoint;
using slang::IGlobalSession;
using slang::IModule;
using slang::ISession;

// Slot numbers derived from the slang.h we build against.
const size_t kCreateSession = VtableSlotOf(&IGlobalSession::createSession);
const size_t kLoadModule = VtableSlotOf(&ISession::loadModule);
const size_t kLoadModuleFromSource = VtableSlotOf(&ISession::loadModuleFromSource);
const size_t kLoadModuleFromSourceString = VtableSlotOf(&ISession::loadModuleFromSourceString);
const size_t kCreateComposite = VtableSlotOf(&ISession::createCompositeComponentType);
const size_t kCreateTypeConformance = VtableSlotOf(&ISession::createTypeConformanceComponentType);
const size_t kSessionRelease = VtableSlotOf(&ISession::release);
const size_t kFindEntryPointByName = VtableSlotOf(&IModule::findEntryPointByName);
const size_t kFindAndCheckEntryPoint = VtableSlotOf(&IModule::findAndCheckEntryPoint);
const size_t kSerialize = VtableSlotOf(&IModule::serialize);
const size_t kGetEntryPointCode = VtableSlotOf(&IComponentType::getEntryPointCode);
const size_t kLink = VtableSlotOf(&IComponentType::link);
const size_t kLinkWithOptions = VtableSlotOf(&IComponentType::linkWithOptions);
const size_t kRenameEntryPoint = VtableSlotOf(&IComponentType::renameEntryPoint);
const size_t kSpecialize = VtableSlotOf(&IComponentType::specialize);

}  // namespace hooks

std::string PatchedSlotsText() {
  using namespace hooks;
  const std::pair<std::string_view, size_t> slots[] = {
      {"slang::IGlobalSession createSession", kCreateSession},
      {"slang::ISession loadModule", kLoadModule},
      {"slang::ISession loadModuleFromSource", kLoadModuleFromSource},
      {"slang::ISession loadModuleFromSourceString", kLoadModuleFromSourceString},
      {"slang::ISession createCompositeComponentType", kCreateComposite},
      {"slang::ISession createTypeConformanceComponentType", kCreateTypeConformance},
      {"slang::ISession release", kSessionRelease},
      {"slang::IModule findEntryPointByName", kFindEntryPointByName},
      {"slang::IModule findAndCheckEntryPoint", kFindAndCheckEntryPoint},
      {"slang::IModule serialize", kSerialize},
      {"slang::IComponentType getEntryPointCode", kGetEntryPointCode},
      {"slang::IComponentType link", kLink},
      {"slang::IComponentType linkWithOptions", kLinkWithOptions},
      {"slang::IComponentType renameEntryPoint", kRenameEntryPoint},
      {"slang::IComponentType specialize", kSpecialize},
  };
  std::string text;
  for (const auto& [method, slot] : slots) text += fmt::format("{} {}\n", method, slot);
  return text;
}

namespace hooks {

HookState& State() {
  static HookState* state = new HookState;  // never destroyed: hooks may run during exit
  return *state;
}

void Count(uint64_t HookCounts::*counter) {
  std::lock_guard lock(State().mutex);
  ++(State().counts.*counter);
}

void NotifyModuleRequested(const void* session, const ComponentPtr& module, double load_seconds) {
  std::shared_ptr<const SessionInfo> info;
  std::string toolchain;
  {
    std::lock_guard lock(State().mutex);
    auto it = State().sessions.find(session);
    if (it == State().sessions.end()) return;
    info = it->second;
    toolchain = State().toolchain;
  }
  for (HookListener* listener : *Listeners())
    Notify(listener,
           [&](HookListener& it) { it.OnModuleRequested(*info, toolchain, module, load_seconds); });
}

template <typename Fn>
Fn Original(const void* self, size_t slot) {
  return reinterpret_cast<Fn>(State().patcher.Original(VtableOf(self), slot));
}

void Patch(const void* object, size_t slot, void* hook) {
  absl::Status status = State().patcher.Patch(VtableOf(object), slot, hook);
  if (!status.ok()) PrintLineToStderr(fmt::format("spreplay: cannot hook Slang: {}", status));
}

void PatchComponentType(IComponentType* component);
void PatchModule(IModule* module);

// Keeps `object` alive and remembers what it contains.
void Track(IComponentType* object, ComponentPtr component) {
  const void* session = object->getSession();
  std::lock_guard lock(State().mutex);
  auto [it, inserted] = State().components.try_emplace(object);
  if (inserted) object->addRef();
  it->second = {std::move(component), session};
}

ComponentPtr Lookup(const void* object) {
  std::lock_guard lock(State().mutex);
  auto it = State().components.find(object);
  return it == State().components.end()
             ? Component::Opaque(
                   "part of its program was made by a Slang call spreplay does not follow (a "
                   "module loaded from IR, say)")
             : it->second.description;
}

std::string TypeFullName(slang::TypeReflection* type) {
  return spreplay::TypeFullName(State().slang.declarations, type);
}

absl::StatusOr<FileContent> SessionFile(const void* session, const std::string& path) {
  const auto key = std::make_pair(session, path);
  {
    std::lock_guard lock(State().mutex);
    if (auto it = State().session_files.find(key); it != State().session_files.end())
      return it->second;
  }
  absl::StatusOr<FileContent> content = State().files.Read(path);
  if (!content.ok()) return content.status();
  std::lock_guard lock(State().mutex);
  return State().session_files.try_emplace(key, *content).first->second;
}

std::optional<Digest> StringModuleDigest(const void* session, const std::string& path) {
  std::lock_guard lock(State().mutex);
  auto it = State().string_modules.find(std::make_pair(session, path));
  if (it == State().string_modules.end()) return std::nullopt;
  return it->second;
}

// Describes `module` as its session saw it, adding the files it read to
// `contents`.
absl::StatusOr<ComponentPtr> DescribeInSessionUncontained(IModule* module,
                                                          const ModuleRequest& request,
                                                          std::vector<FileContent>& contents) {
  const void* session = module->getSession();
  return DescribeLoadedModule(
      module, request,
      [&contents, session](const std::string& dependency) -> absl::StatusOr<Digest> {
        if (std::optional<Digest> imported = StringModuleDigest(session, dependency))
          return *imported;
        absl::StatusOr<FileContent> content = SessionFile(session, dependency);
        if (!content.ok()) return content.status();
        contents.push_back(*content);
        return content->digest;
      },
      [session](const std::string& name) -> std::optional<ServedImport> {
        std::lock_guard lock(State().mutex);
        auto it = State().served_imports.find(
            std::make_pair(session, std::string(WithoutSlangExtension(name))));
        if (it == State().served_imports.end()) return std::nullopt;
        return it->second;
      });
}

// A module the hooks cannot describe (Slang threw, say) is opaque: its
// kernels compile as stock.
absl::StatusOr<ComponentPtr> DescribeInSession(IModule* module, const ModuleRequest& request,
                                               std::vector<FileContent>& contents) {
  return Contained("describing a module it loaded",
                   [&] { return DescribeInSessionUncontained(module, request, contents); });
}

// DeclaringFiles of the module of `session` that declares `type`, as the
// hooks know it or, for one Slang loaded for an import, as they would
// describe it; none for a type of Slang's core module.
absl::StatusOr<std::vector<SourceFile>> FilesDeclaring(ISession* session,
                                                       slang::TypeReflection* type) {
  IModule* module = ModuleDeclaring(State().slang.declarations, session, type);
  if (!module) return std::vector<SourceFile>{};
  ComponentPtr known;
  {
    std::lock_guard lock(State().mutex);
    if (auto it = State().components.find(module); it != State().components.end())
      known = it->second.description;
  }
  if (!known) {
    std::vector<FileContent> contents;
    absl::StatusOr<ComponentPtr> described = DescribeInSession(module, ModuleRequest{}, contents);
    if (!described.ok()) return described.status();
    known = *described;
  }
  if (!known->keyable) return absl::FailedPreconditionError(NotKeyableReason(known));
  return DeclaringFiles(*known);
}

bool DescribeModule(IModule* module, const char* requested_name, const char* path,
                    std::optional<std::string> source, double load_seconds) {
  if (!module) return false;
  {
    std::lock_guard lock(State().mutex);
    if (State().components.contains(module)) return false;  // a cached load of a module we know
  }
  PatchModule(module);
  const void* session = module->getSession();
  ModuleRequest request;
  request.requested_name = requested_name ? requested_name : "";
  request.source = std::move(source);
  request.path = path ? path : "";
  std::vector<FileContent> contents;
  absl::StatusOr<ComponentPtr> described = DescribeInSession(module, request, contents);
  const std::string name = module->getName() ? module->getName() : "";
  if (!described.ok()) {
    Log("{}; its kernels will always compile", described.status());
  } else {
    Log("module {} ({} dependencies) {}", name, (*described)->dependencies.size(),
        (*described)->digest.ToHex().substr(0, 12));
  }
  const bool readable = described.ok();
  ComponentPtr component =
      readable ? *described
               : Component::Opaque(fmt::format("spreplay could not read a file it depends on: {}",
                                               described.status().message()));
  Track(module, component);
  if (!readable) return true;
  if (component->source) {
    std::lock_guard lock(State().mutex);
    State().string_modules[std::make_pair(session, component->path)] = component->digest;
  }
  for (HookListener* listener : *Listeners())
    Notify(listener, [&](HookListener& it) { it.OnModuleLoaded(component, contents); });
  if (requested_name || request.source) NotifyModuleRequested(session, component, load_seconds);
  return true;
}

// ---- IComponentType hooks ----

SlangResult SLANG_MCALL HookLink(IComponentType* self, IComponentType** out,
                                 ISlangBlob** diagnostics) {
  auto original =
      Original<SlangResult(SLANG_MCALL*)(IComponentType*, IComponentType**, ISlangBlob**)>(self,
                                                                                           kLink);
  SlangResult result = original(self, out, diagnostics);
  if (SLANG_SUCCEEDED(result) && out && *out) {
    PatchComponentType(*out);
    Track(*out, Component::Linked(Lookup(self), {}));
  }
  return result;
}

SlangResult SLANG_MCALL HookLinkWithOptions(IComponentType* self, IComponentType** out,
                                            uint32_t count, slang::CompilerOptionEntry* entries,
                                            ISlangBlob** diagnostics) {
  auto original = Original<SlangResult(SLANG_MCALL*)(IComponentType*, IComponentType**, uint32_t,
                                                     slang::CompilerOptionEntry*, ISlangBlob**)>(
      self, kLinkWithOptions);
  SlangResult result = original(self, out, count, entries, diagnostics);
  if (SLANG_SUCCEEDED(result) && out && *out) {
    PatchComponentType(*out);
    Track(*out, Component::Linked(Lookup(self), CopyOptions(entries, count)));
  }
  return result;
}

SlangResult SLANG_MCALL HookRenameEntryPoint(IComponentType* self, const char* name,
                                             IComponentType** out) {
  auto original =
      Original<SlangResult(SLANG_MCALL*)(IComponentType*, const char*, IComponentType**)>(
          self, kRenameEntryPoint);
  SlangResult result = original(self, name, out);
  if (SLANG_SUCCEEDED(result) && out && *out) {
    PatchComponentType(*out);
    Track(*out, Component::Renamed(Lookup(self), name ? name : ""));
  }
  return result;
}

// A specialization argument as keys hold it: a type by its full name, an
// expression by its text. A name is content only if it means that type in
// `component`'s own modules (whose content is keyed): a type of another
// module with the same name would get the same key.
std::optional<std::string> SpecializationArgTextUncontained(
    IComponentType* component, const slang::SpecializationArg& argument) {
  switch (argument.kind) {
    case slang::SpecializationArg::Kind::Type: {
      std::string name = TypeFullName(argument.type);
      slang::ProgramLayout* layout = name.empty() ? nullptr : component->getLayout();
      if (!layout || !State().slang.find_type_by_name) return std::nullopt;
      SlangReflectionType* found =
          State().slang.find_type_by_name(reinterpret_cast<SlangReflection*>(layout), name.c_str());
      if (found != reinterpret_cast<SlangReflectionType*>(argument.type)) return std::nullopt;
      return "type " + name;
    }
    case slang::SpecializationArg::Kind::Expr:
      if (!argument.expr) return std::nullopt;
      return std::string("expr ") + argument.expr;
    default:
      return std::nullopt;
  }
}

// No text for an argument Slang throws on: the specialisation is then opaque.
std::optional<std::string> SpecializationArgText(
    IComponentType* component, const slang::SpecializationArg& argument) noexcept {
  try {
    return SpecializationArgTextUncontained(component, argument);
  } catch (...) {
    return std::nullopt;
  }
}

SlangResult SLANG_MCALL HookSpecialize(IComponentType* self,
                                       const slang::SpecializationArg* arguments, SlangInt count,
                                       IComponentType** out, ISlangBlob** diagnostics) {
  auto original =
      Original<SlangResult(SLANG_MCALL*)(IComponentType*, const slang::SpecializationArg*, SlangInt,
                                         IComponentType**, ISlangBlob**)>(self, kSpecialize);
  SlangResult result = original(self, arguments, count, out, diagnostics);
  if (SLANG_SUCCEEDED(result) && out && *out) {
    std::vector<std::string> texts;
    for (SlangInt i = 0; i < count; ++i) {
      std::optional<std::string> text = SpecializationArgText(self, arguments[i]);
      if (!text) break;
      texts.push_back(*std::move(text));
    }
    PatchComponentType(*out);
    Track(*out, texts.size() == static_cast<size_t>(count)
                    ? Component::Specialized(Lookup(self), std::move(texts))
                    : Component::Opaque("it was specialised with an argument spreplay cannot "
                                        "name (a type its own modules do not declare under that "
                                        "name, or an unknown kind)"));
  }
  return result;
}

// `program` with each type conformance of an automatic id given the id Slang
// assigned to it in its session, which is what the code depends on. Asking
// assigns an id if none was yet, as slang-rhi's own question does when it
// binds an object of that type: the ids are consistent within the process,
// though their order may differ from a process without spreplay.
ComponentPtr ResolveAutomaticConformancesOrThrow(const ComponentPtr& program) {
  {
    // Most apps create none: then no program needs a walk on each request.
    std::lock_guard lock(State().mutex);
    if (State().automatic_conformances.empty()) return program;
  }
  bool automatic = false;
  ForEachDistinctNode(program, [&](const Component& node) {
    automatic =
        automatic || (node.kind == Component::Kind::kTypeConformance && node.conformance_id < 0);
  });
  if (!automatic) return program;
  return RebuildTree(program, [](const ComponentPtr& node) -> ComponentPtr {
    if (node->kind != Component::Kind::kTypeConformance || node->conformance_id >= 0)
      return nullptr;
    HookState::AutomaticConformance where;
    {
      std::lock_guard lock(State().mutex);
      auto it = State().automatic_conformances.find(node.get());
      if (it == State().automatic_conformances.end()) return nullptr;
      where = it->second;
    }
    uint32_t id = 0;
    if (SLANG_FAILED(where.session->getTypeConformanceWitnessSequentialID(
            where.type, where.interface_type, &id)))
      return nullptr;
    return Component::TypeConformance(node->name, node->interface_name, id, node->dependencies);
  });
}

ComponentPtr ResolveAutomaticConformances(const ComponentPtr& program) noexcept {
  try {
    return ResolveAutomaticConformancesOrThrow(program);
  } catch (...) {
    return Component::Opaque("spreplay could not resolve its type conformances' ids");
  }
}

SlangResult SLANG_MCALL HookGetEntryPointCode(IComponentType* self, SlangInt entry_point_index,
                                              SlangInt target_index, ISlangBlob** out_code,
                                              ISlangBlob** out_diagnostics) {
  auto original = Original<SlangResult(SLANG_MCALL*)(
      IComponentType*, SlangInt, SlangInt, ISlangBlob**, ISlangBlob**)>(self, kGetEntryPointCode);
  KernelRequest request;
  request.program = ResolveAutomaticConformances(Lookup(self));
  request.entry_point_index = entry_point_index;
  request.target_index = target_index;
  {
    std::lock_guard lock(State().mutex);
    auto it = State().sessions.find(self->getSession());
    if (it != State().sessions.end()) request.session = it->second;
    request.toolchain = State().toolchain;
  }
  const bool keyable = request.session && request.program->keyable;
  if (keyable) {
    request.key = KernelKey({request.toolchain, request.session->digest, request.program->digest,
                             entry_point_index, target_index});
  }
  ServedKernel served;
  std::string refusal;
  for (HookListener* listener : *Listeners()) {
    KernelDecision decision = KernelDecision::kPass;
    Notify(listener,
           [&](HookListener& it) { decision = it.DecideKernel(request, &served, &refusal); });
    switch (decision) {
      case KernelDecision::kPass:
        continue;
      case KernelDecision::kServe:
        if (State().options.verbose)
          Log("served kernel {} ({} bytes)", request.key.ToHex().substr(0, 16), served.size);
        Count(&HookCounts::served);
        if (out_code) *out_code = NewBorrowedBlob(served.data, served.size);
        if (out_diagnostics) *out_diagnostics = nullptr;
        return SLANG_OK;
      case KernelDecision::kRefuse:
        Count(&HookCounts::refused);
        if (out_code) *out_code = nullptr;
        if (out_diagnostics) *out_diagnostics = NewOwnedBlob(refusal + "\n");
        return SLANG_FAIL;
    }
  }
  const auto start = std::chrono::steady_clock::now();
  SlangResult result = original(self, entry_point_index, target_index, out_code, out_diagnostics);
  const double seconds = SecondsSince(start);
  Log("compiled {} in {:.3f} s{}",
      keyable ? request.key.ToHex().substr(0, 16) : "an untracked program", seconds,
      keyable ? "" : " (not keyable)");
  Count(keyable ? &HookCounts::compiled : &HookCounts::not_keyable);
  if (SLANG_SUCCEEDED(result) && out_code && *out_code) {
    const void* code = (*out_code)->getBufferPointer();
    const size_t size = (*out_code)->getBufferSize();
    for (HookListener* listener : *Listeners())
      Notify(listener,
             [&](HookListener& it) { it.OnKernelCompiled(request, code, size, seconds); });
  }
  return result;
}

// ---- IModule hooks ----

SlangResult SLANG_MCALL HookFindEntryPointByName(IModule* self, const char* name,
                                                 IEntryPoint** out) {
  auto original = Original<SlangResult(SLANG_MCALL*)(IModule*, const char*, IEntryPoint**)>(
      self, kFindEntryPointByName);
  SlangResult result = original(self, name, out);
  if (SLANG_SUCCEEDED(result) && out && *out) {
    PatchComponentType(*out);
    Track(*out, Component::EntryPoint(Lookup(self), name ? name : "", kFoundByName));
  }
  return result;
}

SlangResult SLANG_MCALL HookFindAndCheckEntryPoint(IModule* self, const char* name,
                                                   SlangStage stage, IEntryPoint** out,
                                                   ISlangBlob** diagnostics) {
  auto original =
      Original<SlangResult(SLANG_MCALL*)(IModule*, const char*, SlangStage, IEntryPoint**,
                                         ISlangBlob**)>(self, kFindAndCheckEntryPoint);
  SlangResult result = original(self, name, stage, out, diagnostics);
  if (SLANG_SUCCEEDED(result) && out && *out) {
    PatchComponentType(*out);
    Track(*out, Component::EntryPoint(Lookup(self), name ? name : "", int32_t(stage)));
  }
  return result;
}

// sgl serializes every module a session with a module cache loaded, except
// those loaded from the cache, and writes the bytes into the cache. In a
// session created without the cache those bytes carry a digest stock Slang
// rejects; they are made in the session's twin instead (module_cache.h).
SlangResult SLANG_MCALL HookSerialize(IModule* self, ISlangBlob** out) {
  auto original = Original<SlangResult(SLANG_MCALL*)(IModule*, ISlangBlob**)>(self, kSerialize);
  if (!out) return original(self, out);
  std::optional<std::string> bytes =
      SerializeForModuleCache(self, [&]() -> std::optional<std::string> {
        ISlangBlob* here = nullptr;
        if (SLANG_FAILED(original(self, &here)) || !here) return std::nullopt;
        std::string text = BlobToString(here);
        here->release();
        return text;
      });
  if (!bytes) return original(self, out);
  *out = NewOwnedBlob(*std::move(bytes));
  return SLANG_OK;
}

// ---- ISession hooks ----

IModule* SLANG_MCALL HookLoadModule(ISession* self, const char* name, ISlangBlob** diagnostics) {
  auto original =
      Original<IModule*(SLANG_MCALL*)(ISession*, const char*, ISlangBlob**)>(self, kLoadModule);
  ModuleLoadRequest request;
  request.requested_name = name ? name : "";
  const ModuleServing serving = ServeModule(self, request, diagnostics);
  if (serving.outcome == ModuleServing::kServed) return serving.module;
  if (serving.outcome == ModuleServing::kRefused) return nullptr;
  const auto start = std::chrono::steady_clock::now();
  IModule* module = original(self, name, diagnostics);
  const double seconds = SecondsSince(start);
  ReportNotServed(serving, request, DescribeModule(module, name, nullptr, std::nullopt, seconds));
  return module;
}

IModule* SLANG_MCALL HookLoadModuleFromSource(ISession* self, const char* name, const char* path,
                                              ISlangBlob* source, ISlangBlob** diagnostics) {
  auto original = Original<IModule*(SLANG_MCALL*)(ISession*, const char*, const char*, ISlangBlob*,
                                                  ISlangBlob**)>(self, kLoadModuleFromSource);
  const auto start = std::chrono::steady_clock::now();
  IModule* module = original(self, name, path, source, diagnostics);
  const double seconds = SecondsSince(start);
  if (module && source && DescribeModule(module, name, path, BlobToString(source), seconds))
    Count(&HookCounts::modules_compiled);  // not served: sgl loads modules by name or text
  return module;
}

IModule* SLANG_MCALL HookLoadModuleFromSourceString(ISession* self, const char* name,
                                                    const char* path, const char* text,
                                                    ISlangBlob** diagnostics) {
  auto original = Original<IModule*(SLANG_MCALL*)(ISession*, const char*, const char*, const char*,
                                                  ISlangBlob**)>(self, kLoadModuleFromSourceString);
  ModuleLoadRequest request;
  request.name = name ? name : "";
  request.path = path ? path : "";
  if (text) request.text = std::string_view(text);
  const ModuleServing serving = ServeModule(self, request, diagnostics);
  if (serving.outcome == ModuleServing::kServed) return serving.module;
  if (serving.outcome == ModuleServing::kRefused) return nullptr;
  const auto start = std::chrono::steady_clock::now();
  IModule* module = original(self, name, path, text, diagnostics);
  const double seconds = SecondsSince(start);
  ReportNotServed(serving, request,
                  module && text && DescribeModule(module, name, path, std::string(text), seconds));
  return module;
}

SlangResult SLANG_MCALL HookCreateComposite(ISession* self, IComponentType* const* components,
                                            SlangInt count, IComponentType** out,
                                            ISlangBlob** diagnostics) {
  auto original =
      Original<SlangResult(SLANG_MCALL*)(ISession*, IComponentType* const*, SlangInt,
                                         IComponentType**, ISlangBlob**)>(self, kCreateComposite);
  SlangResult result = original(self, components, count, out, diagnostics);
  // A composite of one is that one component, which Slang hands back itself:
  // it keeps its own description (a module stays a module, with its files).
  if (SLANG_SUCCEEDED(result) && out && *out && !(count == 1 && *out == components[0])) {
    std::vector<ComponentPtr> children;
    for (SlangInt i = 0; i < count; ++i) children.push_back(Lookup(components[i]));
    PatchComponentType(*out);
    Track(*out, Component::Composite(std::move(children)));
  }
  return result;
}

SlangResult SLANG_MCALL HookCreateTypeConformance(ISession* self, slang::TypeReflection* type,
                                                  slang::TypeReflection* interface_type,
                                                  slang::ITypeConformance** out,
                                                  SlangInt id_override, ISlangBlob** diagnostics) {
  auto original =
      Original<SlangResult(SLANG_MCALL*)(ISession*, slang::TypeReflection*, slang::TypeReflection*,
                                         slang::ITypeConformance**, SlangInt, ISlangBlob**)>(
          self, kCreateTypeConformance);
  SlangResult result = original(self, type, interface_type, out, id_override, diagnostics);
  if (SLANG_SUCCEEDED(result) && out && *out) {
    const std::string type_name = TypeFullName(type);
    const std::string interface_name = TypeFullName(interface_type);
    PatchComponentType(*out);
    if (type_name.empty() || interface_name.empty()) {
      Track(*out, Component::Opaque("a type conformance names a type spreplay cannot name"));
      return result;
    }
    // An automatic id (-1) comes from a counter in the session: a program's
    // code depends on which id Slang assigned, which the request resolves
    // (ResolveAutomaticConformances) before it keys the program.
    absl::StatusOr<std::vector<SourceFile>> declaring = FilesDeclaring(self, type);
    if (!declaring.ok()) {
      Track(*out, Component::Opaque(fmt::format("the module declaring {} is not keyable: {}",
                                                type_name, declaring.status().message())));
      return result;
    }
    ComponentPtr conformance = Component::TypeConformance(
        type_name, interface_name, id_override < 0 ? -1 : id_override, *std::move(declaring));
    if (id_override < 0) {
      std::lock_guard lock(State().mutex);
      State().automatic_conformances[conformance.get()] = {conformance, self, type, interface_type};
    }
    Track(*out, std::move(conformance));
  }
  return result;
}

// ---- ISession lifetime ----

// Erases every entry keyed by a session's address. Called with the state's
// mutex held.
void EraseEntriesKeyedBy(const void* session) {
  const auto keyed_by_session = [session](const auto& entry) {
    return entry.first.first == session;
  };
  absl::erase_if(State().session_files, keyed_by_session);
  absl::erase_if(State().string_modules, keyed_by_session);
  absl::erase_if(State().served_imports, keyed_by_session);
  absl::erase_if(State().automatic_conformances,
                 [session](const auto& entry) { return entry.second.session == session; });
  absl::erase_if(State().served_ir,
                 [session](const auto& entry) { return entry.second.session == session; });
}

// Takes `session`'s module cache twin out of the state, for the caller to
// release once it holds no lock. Called with the state's mutex held.
ISession* TakeModuleCacheTwin(const void* session) {
  auto it = State().module_cache_twins.find(session);
  if (it == State().module_cache_twins.end()) return nullptr;
  ISession* twin = it->second.session;
  State().module_cache_twins.erase(it);
  return twin;
}

// Forgets `session` and everything the hooks know of what was made in it,
// and releases the references that kept those objects alive, once the app
// has let the session go. Components go first: they point at their session
// without owning it. False if the hooks did not hold the session.
bool ForgetSession(ISession* session) {
  std::vector<const void*> components;
  std::shared_ptr<const SessionInfo> info;
  ISession* twin = nullptr;
  {
    std::lock_guard lock(State().mutex);
    auto found = State().sessions.find(session);
    if (found == State().sessions.end()) return false;
    info = found->second;
    State().sessions.erase(found);
    for (const auto& [object, tracked] : State().components) {
      if (tracked.session == session) components.push_back(object);
    }
    for (const void* object : components) State().components.erase(object);
    EraseEntriesKeyedBy(session);
    twin = TakeModuleCacheTwin(session);
  }
  Log("session {} let go: releasing it and the {} components made in it", info->ordinal,
      components.size());
  // Tracked objects are IComponentTypes (Track), stored by that pointer.
  for (const void* object : components)
    static_cast<IComponentType*>(const_cast<void*>(object))->release();
  session->release();
  if (twin) twin->release();
  return true;
}

uint32_t SLANG_MCALL HookSessionRelease(ISession* self) {
  auto original = Original<uint32_t(SLANG_MCALL*)(ISession*)>(self, kSessionRelease);
  const uint32_t remaining = original(self);
  // One reference left, on a session the hooks hold, is the hooks' own: the
  // app has let the session go, and the hooks' release destroys it.
  if (remaining == 1 && ForgetSession(self)) return 0;
  return remaining;
}

// ---- IGlobalSession hooks ----

SlangResult SLANG_MCALL HookCreateSession(IGlobalSession* self, const slang::SessionDesc& desc,
                                          ISession** out) {
  auto original =
      Original<SlangResult(SLANG_MCALL*)(IGlobalSession*, const slang::SessionDesc&, ISession**)>(
          self, kCreateSession);
  auto info = std::make_shared<SessionInfo>();
  info->config = SessionConfig::From(desc, State().slang.Directory());
  info->config.working_directory = WorkingDirectoryAsToolsSeeIt();
  info->digest = info->config.ContentDigest();
  info->location_digest = info->config.LocationDigest(info->digest);

  // A session whose modules the archive serves runs without the module
  // cache, which would reject them (module_cache.h). Its keys are those of
  // the session sgl asked for, which they do not depend on.
  bool bypass_module_cache = false;
  if (UsesModuleCache(info->config.options)) {
    for (HookListener* listener : *Listeners()) {
      Notify(listener, [&](HookListener& it) {
        bypass_module_cache = bypass_module_cache || it.ServesModulesOf(info->digest);
      });
    }
  }
  std::vector<CompilerOption> options;
  std::vector<slang::CompilerOptionEntry> entries;
  slang::SessionDesc without_cache = desc;
  if (bypass_module_cache) {
    options = WithoutModuleCache(info->config.options);
    for (const CompilerOption& option : options) entries.push_back(option.ToEntry());
    without_cache.compilerOptionEntries = entries.data();
    without_cache.compilerOptionEntryCount = static_cast<uint32_t>(entries.size());
  }
  SlangResult result = original(self, bypass_module_cache ? without_cache : desc, out);
  if (SLANG_FAILED(result) || !out || !*out) return result;
  ISession* session = *out;
  // Its twin, from sgl's own description, writes the cache for it.
  ISession* twin = nullptr;
  ModuleCacheLayout layout;
  if (bypass_module_cache) {
    layout = ModuleCacheLayoutOf(info->config.options);
    if (!layout.empty() && (SLANG_FAILED(original(self, desc, &twin)) || !twin)) twin = nullptr;
  }
  Patch(session, kLoadModule, reinterpret_cast<void*>(&HookLoadModule));
  Patch(session, kLoadModuleFromSource, reinterpret_cast<void*>(&HookLoadModuleFromSource));
  Patch(session, kLoadModuleFromSourceString,
        reinterpret_cast<void*>(&HookLoadModuleFromSourceString));
  Patch(session, kCreateComposite, reinterpret_cast<void*>(&HookCreateComposite));
  Patch(session, kCreateTypeConformance, reinterpret_cast<void*>(&HookCreateTypeConformance));
  Patch(session, kSessionRelease, reinterpret_cast<void*>(&HookSessionRelease));

  info->without_module_cache = bypass_module_cache;
  ISession* stale_twin = nullptr;
  {
    std::lock_guard lock(State().mutex);
    info->ordinal = State().session_count++;
    // A Linkage the hooks never registered (a compile request's own, say)
    // may have left entries at this address; the new session starts clean.
    EraseEntriesKeyedBy(session);
    stale_twin = TakeModuleCacheTwin(session);
    if (twin) State().module_cache_twins[session] = {twin, std::move(layout)};
    auto [it, inserted] = State().sessions.insert_or_assign(session, info);
    if (inserted) session->addRef();
  }
  if (stale_twin) stale_twin->release();
  Log("session {} created ({} options, {} macros){}", info->ordinal, info->config.options.size(),
      info->config.macros.size(),
      !bypass_module_cache ? ""
      : twin ? ", without slangpy's module cache: the archive serves its modules, and a twin "
               "session writes the cache"
             : ", without slangpy's module cache: the archive serves its modules");
  for (HookListener* listener : *Listeners())
    Notify(listener, [&](HookListener& it) { it.OnSessionCreated(*info); });
  return result;
}

void PatchComponentType(IComponentType* component) {
  Patch(component, kGetEntryPointCode, reinterpret_cast<void*>(&HookGetEntryPointCode));
  Patch(component, kLink, reinterpret_cast<void*>(&HookLink));
  Patch(component, kLinkWithOptions, reinterpret_cast<void*>(&HookLinkWithOptions));
  Patch(component, kRenameEntryPoint, reinterpret_cast<void*>(&HookRenameEntryPoint));
  Patch(component, kSpecialize, reinterpret_cast<void*>(&HookSpecialize));
}

void PatchModule(IModule* module) {
  PatchComponentType(module);
  Patch(module, kFindEntryPointByName, reinterpret_cast<void*>(&HookFindEntryPointByName));
  Patch(module, kFindAndCheckEntryPoint, reinterpret_cast<void*>(&HookFindAndCheckEntryPoint));
  Patch(module, kSerialize, reinterpret_cast<void*>(&HookSerialize));
}

}  // namespace hooks

using namespace hooks;

absl::Status ConfigureSlangHooks(const HookOptions& options) {
  std::lock_guard lock(State().mutex);
  // The hooks read the options without a lock: they never change once set.
  if (State().configured) return absl::OkStatus();
  SlangLibrary slang;
  if (!options.slang_library.empty()) {
    absl::StatusOr<SlangLibrary> opened = OpenSlangLibrary(options.slang_library);
    if (!opened.ok()) return opened.status();
    // A library of another build is refused before anything of it is
    // patched, with nothing configured.
    if (absl::Status same = RequireThisSlangBuild(*opened, "library"); !same.ok()) return same;
    slang = *std::move(opened);
  }
  State().configured = true;
  State().options = options;
  State().toolchain = options.toolchain;
  State().slang = std::move(slang);
  return absl::OkStatus();
}

HookCounts GetHookCounts() {
  std::lock_guard lock(State().mutex);
  return State().counts;
}

HeldObjects GetHeldObjects() {
  std::lock_guard lock(State().mutex);
  return {State().sessions.size(), State().components.size()};
}

void AddHookListener(HookListener* listener) {
  std::lock_guard lock(State().mutex);  // one writer at a time
  auto grown = std::make_shared<std::vector<HookListener*>>(*Listeners());
  grown->push_back(listener);
  State().listeners.store(std::move(grown), std::memory_order_release);
}

void OnGlobalSessionCreated(void* pointer) {
  auto* global_session = static_cast<IGlobalSession*>(pointer);
  const char* tag = global_session->getBuildTagString();
  const std::string build_tag = tag ? tag : "?";
  // A Slang other than the one configured (a second libslang in the
  // process) is left alone: its vtables are not this build's.
  if (build_tag != kSlangBuild) {
    PrintLineToStderr(fmt::format(
        "spreplay: a Slang global session of build {} was created, but spreplay is built for "
        "Slang {}: its kernels compile as stock, unrecorded and unserved",
        build_tag, kSlangBuild));
    return;
  }
  std::string toolchain;
  {
    std::lock_guard lock(State().mutex);
    State().toolchain = ToolchainName(State().options.toolchain, build_tag);
    toolchain = State().toolchain;
  }
  for (HookListener* listener : *Listeners())
    Notify(listener, [&](HookListener& it) { it.OnToolchainKnown(toolchain, build_tag); });
  Patch(global_session, kCreateSession, reinterpret_cast<void*>(&HookCreateSession));
  Log("hooked Slang global session ({})", toolchain);
}

}  // namespace spreplay
