#include "replayer/ir_modules.h"

#include <algorithm>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "common/contained_call.h"
#include "fmt/format.h"
#include "interpose/blobs.h"
#include "replayer/dependency_check.h"
#include "replayer/load_order.h"
#include "replayer/module_serializer.h"
#include "replayer/path_aliases.h"
#include "replayer/program_builder.h"
#include "replayer/recorded_working_directory.h"
#include "replayer/replay_session.h"
#include "replayer/replayer_slang.h"

namespace spreplay {
namespace {

// The layout slangpy and slang-rhi bind arguments with, as Slang writes it.
absl::StatusOr<std::string> LayoutJson(slang::IComponentType* program) {
  ComPtr<ISlangBlob> diagnostics;
  slang::ProgramLayout* layout = program->getLayout(0, diagnostics.WriteRef());
  absl::StatusOr<const SlangLibrary*> slang = ReplayerSlang();
  if (!slang.ok()) return slang.status();
  ComPtr<ISlangBlob> json;
  if (!layout ||
      SLANG_FAILED((*slang)->layout_to_json(reinterpret_cast<SlangReflection*>(layout), nullptr,
                                            json.WriteRef())) ||
      !json) {
    return absl::InternalError(
        fmt::format("Slang has no layout for the program: {}", BlobToString(diagnostics.get())));
  }
  return BlobToString(json.get());
}

// The module of `session` that `component` is, or null.
slang::IModule* ModuleOf(slang::ISession* session, slang::IComponentType* component) {
  for (SlangInt i = 0; i < session->getLoadedModuleCount(); ++i) {
    slang::IModule* module = session->getLoadedModule(i);
    if (static_cast<slang::IComponentType*>(module) == component) return module;
  }
  return nullptr;
}

// The code of each entry point `component`, a module, defines, each linked
// alone with it, as sgl's load_program links one. A module no recorded
// kernel was built from has no recorded code to match: its entry points'
// code from IR must be this, from source.
absl::StatusOr<std::vector<std::string>> EntryPointCodes(slang::ISession* session,
                                                         slang::IComponentType* component,
                                                         int64_t target_index) {
  slang::IModule* module = ModuleOf(session, component);
  if (!module) return absl::InternalError("the module is not among the session's modules");
  std::vector<std::string> codes;
  for (SlangInt32 i = 0; i < module->getDefinedEntryPointCount(); ++i) {
    ComPtr<slang::IEntryPoint> entry_point;
    if (SLANG_FAILED(module->getDefinedEntryPoint(i, entry_point.WriteRef())) || !entry_point)
      return absl::InternalError(fmt::format("Slang has no entry point {} of its {}", i,
                                             module->getDefinedEntryPointCount()));
    ComPtr<ISlangBlob> diagnostics;
    slang::IComponentType* parts[] = {module, entry_point.get()};
    ComPtr<slang::IComponentType> composite;
    ComPtr<slang::IComponentType> linked;
    ComPtr<ISlangBlob> code;
    if (SLANG_FAILED(session->createCompositeComponentType(parts, 2, composite.WriteRef(),
                                                           diagnostics.WriteRef())) ||
        SLANG_FAILED(composite->link(linked.WriteRef(), diagnostics.WriteRef())) ||
        SLANG_FAILED(
            linked->getEntryPointCode(0, target_index, code.WriteRef(), diagnostics.WriteRef())) ||
        !code) {
      return absl::InvalidArgumentError(
          fmt::format("Slang failed to generate the code of its entry point {}: {}", i,
                      BlobToString(diagnostics.get())));
    }
    codes.push_back(BlobToString(code.get()));
  }
  return codes;
}

// "" if the entry points of `component`, a module loaded from IR, give the
// code `source_codes` holds, else why not.
absl::StatusOr<std::string> SameEntryPointCodes(slang::ISession* session,
                                                slang::IComponentType* component,
                                                int64_t target_index,
                                                const std::vector<std::string>& source_codes) {
  absl::StatusOr<std::vector<std::string>> codes =
      EntryPointCodes(session, component, target_index);
  if (!codes.ok()) return codes.status();
  if (codes->size() != source_codes.size())
    return absl::FailedPreconditionError(fmt::format(
        "it defines {} entry points from IR, {} from source", codes->size(), source_codes.size()));
  for (size_t i = 0; i < codes->size(); ++i) {
    if ((*codes)[i] != source_codes[i])
      return absl::FailedPreconditionError(fmt::format(
          "the code of its entry point {} from IR differs from its code from source", i));
  }
  return "";
}

using WarmModules = absl::flat_hash_map<slang::IModule*, absl::StatusOr<std::string>>;

// Whether every one of `programs` holds `module` (by its content and name).
bool EveryProgramHolds(const std::vector<absl::flat_hash_set<ModuleNodeKey>>& modules_of_programs,
                       const Component& module) {
  return std::all_of(modules_of_programs.begin(), modules_of_programs.end(),
                     [&](const auto& modules) { return modules.contains(NodeKeyOf(module)); });
}

// Where the other modules' dependency lists name `module`.
const std::string& Identity(const Component& module) { return module.path; }

// Marks the modules that import each other in a cycle, directly or not, and
// every module that imports one of them (SerializedModule::source_only).
// `named[i]` lists the modules whose files module i depends on.
void MarkImportCycles(const std::vector<std::vector<size_t>>& named,
                      std::vector<SerializedModule>& modules) {
  const size_t count = modules.size();
  std::vector<std::vector<bool>> reaches(count, std::vector<bool>(count, false));
  for (size_t from = 0; from < count; ++from) {
    std::vector<size_t> pending = named[from];
    while (!pending.empty()) {
      const size_t next = pending.back();
      pending.pop_back();
      if (reaches[from][next]) continue;
      reaches[from][next] = true;
      pending.insert(pending.end(), named[next].begin(), named[next].end());
    }
  }
  auto name = [&](size_t i) { return modules[i].description->name; };
  std::vector<bool> cyclic(count, false);
  for (size_t i = 0; i < count; ++i) {
    for (size_t j = 0; j < count && !cyclic[i]; ++j) {
      if (i == j || !reaches[i][j] || !reaches[j][i]) continue;
      cyclic[i] = true;
      modules[i].source_only = fmt::format(
          "it and '{}' import each other (a cycle of imports, which Slang loads from source only)",
          name(j));
    }
  }
  for (size_t i = 0; i < count; ++i) {
    for (size_t j = 0; j < count && modules[i].source_only.empty(); ++j) {
      if (cyclic[j] && reaches[i][j])
        modules[i].source_only = fmt::format(
            "it imports '{}', whose imports form a cycle (loaded from source only)", name(j));
    }
  }
}

}  // namespace

ModuleNodeKey NodeKeyOf(const Component& module) { return {module.digest, module.name}; }

absl::StatusOr<std::unique_ptr<IrModuleBuilder>> IrModuleBuilder::Create(ReplayerOptions options) {
  absl::StatusOr<ComPtr<slang::IGlobalSession>> global_session = CreateGlobalSession(options);
  if (!global_session.ok()) return global_session.status();
  return std::unique_ptr<IrModuleBuilder>(new IrModuleBuilder(*std::move(global_session)));
}

SerializedSession IrModuleBuilder::Serialize(const SessionConfig& config,
                                             const std::vector<RecordedProgram>& programs,
                                             WarmSession* warm) {
  SerializedSession result;
  absl::Status contained = Contained("loading and serializing the modules of the kernels", [&] {
    result = SerializeUncontained(config, programs, warm);
    return absl::OkStatus();
  });
  if (!contained.ok()) {
    result = {};
    result.uses.assign(programs.size(), contained);
    result.layouts.resize(programs.size());
    result.entry_point_codes.resize(programs.size());
  }
  return result;
}

namespace {

// The file modules every kernel loads that import no other module of the
// program but those, and read no file another program holds another version
// of: loaded before the rest, each comes into being as it would in any of
// them, under the name it asked for it by or, where an import loaded it
// first, under the import's. With the files they read, on which every
// program agrees.
absl::StatusOr<SharedModules> ChooseSharedModules(
    ReplaySession& session, const RecordedProgram& first,
    const std::vector<absl::flat_hash_set<ModuleNodeKey>>& modules_of_programs,
    const absl::flat_hash_set<std::string>& disputed_files) {
  const auto identity_of = [&](const Component& module) {
    return module.source ? module.path
                         : session.files().Canonical(module.path).value_or(module.path);
  };
  absl::StatusOr<std::vector<ComponentPtr>> order =
      ModuleLoadOrder(first.program, first.snapshot->string_modules, identity_of);
  if (!order.ok()) return order.status();
  absl::flat_hash_set<std::string> other_modules;  // the program's, by identity
  for (const ComponentPtr& module : *order) other_modules.insert(identity_of(*module));
  SharedModules shared;
  for (const ComponentPtr& module : *order) {
    const std::string identity = identity_of(*module);
    const bool imports_another = std::any_of(
        module->dependencies.begin(), module->dependencies.end(), [&](const SourceFile& file) {
          return file.path != identity && other_modules.contains(file.path);
        });
    const bool disputed =
        std::any_of(module->dependencies.begin(), module->dependencies.end(),
                    [&](const SourceFile& file) { return disputed_files.contains(file.path); });
    if (module->source || imports_another || disputed ||
        !EveryProgramHolds(modules_of_programs, *module))
      continue;
    for (const SourceFile& file : module->dependencies) {
      auto bytes = first.snapshot->files.find(file.path);
      if (bytes == first.snapshot->files.end())
        return absl::NotFoundError(fmt::format("no file {}", file.path));
      shared.files.files.insert(*bytes);
    }
    // What it imports is the modules it leaves to the rest.
    other_modules.erase(identity);
    shared.modules.push_back(module);
  }
  if (shared.modules.empty())
    return absl::NotFoundError("its programs share no module to load first");
  return shared;
}

}  // namespace

absl::StatusOr<std::unique_ptr<WarmSession>> IrModuleBuilder::Warm(
    const SessionConfig& config, const std::vector<RecordedProgram>& programs) {
  // The kernels' modules decide: a module no kernel used is a program of
  // its own module alone, and loads on top of what the kernels share as it
  // would after a kernel of its part loaded it.
  std::vector<absl::flat_hash_set<ModuleNodeKey>> modules_of_programs;
  const RecordedProgram* first = nullptr;
  for (const RecordedProgram& program : programs) {
    if (program.program->kind == Component::Kind::kModule) continue;
    if (!first) first = &program;
    absl::flat_hash_set<ModuleNodeKey>& modules = modules_of_programs.emplace_back();
    ForEachDistinctNode(program.program, [&](const Component& node) {
      if (node.kind == Component::Kind::kModule) modules.insert(NodeKeyOf(node));
    });
  }
  if (!first) return absl::NotFoundError("no kernels");
  // A file two programs hold two versions of (a hot reload) is left to the
  // parts, which ConsistentParts keeps apart.
  absl::flat_hash_map<std::string, const std::string*> contents;
  absl::flat_hash_set<std::string> disputed_files;
  for (const RecordedProgram& program : programs) {
    for (const auto& [path, bytes] : program.snapshot->files) {
      auto [it, inserted] = contents.try_emplace(path, bytes.get());
      if (!inserted && *it->second != *bytes) disputed_files.insert(path);
    }
  }
  absl::StatusOr<std::unique_ptr<ReplaySession>> session =
      ReplaySession::Create(global_session_.get(), config);
  if (!session.ok()) return session.status();
  absl::StatusOr<std::unique_ptr<WarmSession>> warm = Contained("loading shared modules", [&] {
    return WarmUncontained(**session, *first, modules_of_programs, disputed_files,
                           config.HasDebugInformation());
  });
  if (!warm.ok()) return warm.status();
  (*warm)->session = *std::move(session);
  return warm;
}

absl::StatusOr<std::unique_ptr<WarmSession>> IrModuleBuilder::WarmUncontained(
    ReplaySession& session, const RecordedProgram& first,
    const std::vector<absl::flat_hash_set<ModuleNodeKey>>& modules_of_programs,
    const absl::flat_hash_set<std::string>& disputed_files, bool with_source_locations) {
  const RecordedWorkingDirectory working_directory(session.working_directory());
  // Chosen once by the paths as recorded, to know which files to admit, and
  // again once they and the program's directory aliases are in, by the
  // canonical paths the modules' dependency lists use: the two must agree.
  absl::StatusOr<SharedModules> by_recorded_paths =
      ChooseSharedModules(session, first, modules_of_programs, disputed_files);
  if (!by_recorded_paths.ok()) return by_recorded_paths.status();
  if (absl::Status status = session.Admit(by_recorded_paths->files); !status.ok()) return status;
  if (absl::Status status = AddDirectoryAliases(first.program, session.files()); !status.ok())
    return status;
  absl::StatusOr<SharedModules> shared =
      ChooseSharedModules(session, first, modules_of_programs, disputed_files);
  if (!shared.ok()) return shared.status();
  if (shared->modules != by_recorded_paths->modules)
    return absl::NotFoundError("its shared modules differ by their canonical paths");
  const std::vector<ComponentPtr>& leading = shared->modules;
  if (absl::Status status = CheckDependencies(leading, session); !status.ok()) return status;
  for (const ComponentPtr& module : leading) {
    if (module->name == module->requested_name) {
      if (absl::StatusOr<LoadedModule> loaded = session.LoadModule(*module); !loaded.ok())
        return loaded.status();
      continue;
    }
    // Slang loaded it for an import, under the name the import gave it, and
    // the app asked for it by another name later: loaded as an import would,
    // with no request of its own, which the program then makes.
    ComPtr<ISlangBlob> diagnostics;
    slang::IModule* loaded =
        session.session()->loadModule(module->name.c_str(), diagnostics.WriteRef());
    if (!loaded)
      return absl::InvalidArgumentError(fmt::format("Slang failed to load module '{}':\n{}",
                                                    module->name, BlobToString(diagnostics.get())));
    absl::StatusOr<ComponentPtr> described = session.Describe(loaded);
    if (!described.ok()) return described.status();
    if ((*described)->digest != module->digest || (*described)->path != module->path)
      return absl::FailedPreconditionError(fmt::format(
          "module '{}' loaded by its name is not the one its programs import", module->name));
  }
  auto warm = std::make_unique<WarmSession>();
  slang::ISession* slang_session = session.session();
  for (SlangInt i = 0; i < slang_session->getLoadedModuleCount(); ++i) {
    slang::IModule* module = slang_session->getLoadedModule(i);
    absl::StatusOr<ComponentPtr> description = session.Describe(module);
    warm->modules.emplace(
        module, description.ok()
                    ? SerializeModule(slang_session, module, **description, with_source_locations)
                    : description.status());
  }
  return warm;
}

SerializedSession IrModuleBuilder::SerializeUncontained(
    const SessionConfig& config, const std::vector<RecordedProgram>& programs, WarmSession* warm) {
  SerializedSession result;
  absl::StatusOr<std::unique_ptr<ReplaySession>> session =
      warm ? std::move(warm->session) : ReplaySession::Create(global_session_.get(), config);
  if (!session.ok()) {
    result.uses.assign(programs.size(), session.status());
    result.layouts.resize(programs.size());
    result.entry_point_codes.resize(programs.size());
    return result;
  }
  const RecordedWorkingDirectory working_directory((*session)->working_directory());
  std::vector<absl::StatusOr<BuiltComponent>> built;
  for (const RecordedProgram& program : programs) {
    built.push_back(BuildRecordedProgram(**session, program.program, *program.snapshot));
    absl::StatusOr<std::string> layout =
        built.back().ok() ? LayoutJson(built.back()->object.get()) : built.back().status();
    if (!layout.ok()) built.back() = layout.status();
    result.layouts.push_back(layout.ok() ? *std::move(layout) : "");
    absl::StatusOr<std::vector<std::string>> codes = std::vector<std::string>{};
    if (built.back().ok() && program.program->kind == Component::Kind::kModule)
      codes =
          EntryPointCodes((*session)->session(), built.back()->object.get(), program.target_index);
    if (!codes.ok()) built.back() = codes.status();
    result.entry_point_codes.push_back(codes.ok() ? *std::move(codes) : std::vector<std::string>{});
  }

  slang::ISession* slang_session = (*session)->session();
  absl::flat_hash_map<ModuleNodeKey, size_t> by_node_key;
  absl::flat_hash_map<std::string, size_t> by_identity;
  absl::flat_hash_map<size_t, std::string> unserializable;
  const bool with_source_locations = config.HasDebugInformation();
  const SlangInt loaded_count = slang_session->getLoadedModuleCount();
  for (SlangInt i = 0; i < loaded_count; ++i) {
    slang::IModule* module = slang_session->getLoadedModule(i);
    SerializedModule serialized;
    // Described now, whatever the warm session described: a program may
    // have asked for the module by name since an import loaded it.
    absl::StatusOr<ComponentPtr> description = (*session)->Describe(module);
    const auto warmed = warm ? warm->modules.find(module) : WarmModules::iterator();
    absl::StatusOr<std::string> ir =
        warm && warmed != warm->modules.end()
            ? std::move(warmed->second)
            : (description.ok()
                   ? SerializeModule(slang_session, module, **description, with_source_locations)
                   : description.status());
    const size_t index = result.modules.size();
    if (!description.ok()) {
      unserializable[index] = std::string(description.status().message());
      serialized.description = Component::Opaque("undescribable");
    } else {
      serialized.description = *description;
      if (ir.ok()) {
        serialized.ir = *std::move(ir);
      } else {
        unserializable[index] = std::string(ir.status().message());
      }
      by_node_key.try_emplace(NodeKeyOf(*serialized.description), index);
      by_identity.try_emplace(Identity(*serialized.description), index);
    }
    result.modules.push_back(std::move(serialized));
  }
  // A module's dependencies list the files (or pseudo paths) of the modules
  // it imports, which were loaded before it.
  std::vector<std::vector<size_t>> named(result.modules.size());
  for (size_t i = 0; i < result.modules.size(); ++i) {
    for (const SourceFile& file : result.modules[i].description->dependencies) {
      auto imported = by_identity.find(file.path);
      if (imported == by_identity.end() || imported->second == i) continue;
      named[i].push_back(imported->second);
      if (imported->second < i) result.modules[i].imports.push_back(imported->second);
    }
    std::sort(result.modules[i].imports.begin(), result.modules[i].imports.end());
  }
  MarkImportCycles(named, result.modules);

  for (size_t p = 0; p < programs.size(); ++p) {
    if (!built[p].ok()) {
      result.uses.push_back(built[p].status());
      continue;
    }
    absl::btree_set<size_t> used;
    std::string missing;
    ForEachDistinctNode(programs[p].program, [&](const Component& node) {
      if (node.kind != Component::Kind::kModule) return;
      auto it = by_node_key.find(NodeKeyOf(node));
      if (it == by_node_key.end()) {
        missing = node.name;
        return;
      }
      used.insert(it->second);
      used.insert(result.modules[it->second].imports.begin(),
                  result.modules[it->second].imports.end());
    });
    if (!missing.empty()) {
      result.uses.push_back(absl::InternalError(
          fmt::format("module '{}' is not among the modules the session loaded", missing)));
      continue;
    }
    std::string why;
    for (size_t index : used) {
      if (auto it = unserializable.find(index); it != unserializable.end()) why = it->second;
    }
    if (!why.empty()) {
      result.uses.push_back(absl::FailedPreconditionError(why));
      continue;
    }
    result.uses.push_back(std::vector<size_t>(used.begin(), used.end()));
  }
  return result;
}

std::vector<absl::StatusOr<std::string>> IrModuleBuilder::RebuildFromIr(
    const SessionConfig& config, const std::vector<RecordedProgram>& programs,
    const SerializedSession& serialized) {
  std::vector<absl::StatusOr<std::string>> codes;
  IrRebuildSession reuse;
  for (size_t p = 0; p < programs.size(); ++p)
    codes.push_back(RebuildOneFromIr(config, programs, serialized, p, reuse));
  return codes;
}

absl::StatusOr<std::string> IrModuleBuilder::RebuildOneFromIr(
    const SessionConfig& config, const std::vector<RecordedProgram>& programs,
    const SerializedSession& serialized, size_t p, IrRebuildSession& reuse) {
  const absl::StatusOr<std::vector<size_t>>& uses = serialized.uses[p];
  if (!uses.ok()) return uses.status();
  // Dynamic dispatch numbers witness tables from a counter in the session
  // that nothing resets: such a program gets a session of its own, which no
  // later program reuses.
  const bool dispatches = HasTypeConformance(programs[p].program);
  if (!reuse.session || reuse.of != &serialized || reuse.spent || dispatches) {
    absl::StatusOr<std::unique_ptr<ReplaySession>> fresh =
        ReplaySession::Create(global_session_.get(), config);
    if (!fresh.ok()) return fresh.status();
    reuse.session = *std::move(fresh);
    reuse.of = &serialized;
    reuse.loaded.clear();
  }
  reuse.spent = dispatches;
  absl::StatusOr<std::string> code =
      Contained("rebuilding a kernel over modules loaded from IR", [&] {
        return RebuildOne(*reuse.session, programs[p], serialized, *uses, serialized.layouts[p],
                          serialized.entry_point_codes[p], reuse.loaded);
      });
  // Slang may have been left half way through whatever threw.
  if (!code.ok() && absl::IsInternal(code.status())) reuse.session.reset();
  return code;
}

absl::StatusOr<std::string> IrModuleBuilder::RebuildOne(
    ReplaySession& session, const RecordedProgram& program, const SerializedSession& serialized,
    const std::vector<size_t>& uses, const std::string& source_layout,
    const std::vector<std::string>& source_codes, absl::flat_hash_set<size_t>& loaded) {
  const RecordedWorkingDirectory working_directory(session.working_directory());
  if (absl::Status status = session.Admit(*program.snapshot); !status.ok()) return status;
  for (size_t index : uses) {
    const SerializedModule& module = serialized.modules[index];
    // Loaded from the snapshot's source when the program is built.
    if (loaded.contains(index) || !module.source_only.empty()) continue;
    absl::StatusOr<slang::IModule*> from_ir = session.LoadFromIr(module.description, module.ir);
    if (!from_ir.ok()) return from_ir.status();
    loaded.insert(index);
  }
  absl::StatusOr<BuiltComponent> built =
      BuildRecordedProgram(session, program.program, *program.snapshot);
  if (!built.ok()) return built.status();
  absl::StatusOr<std::string> layout = LayoutJson(built->object.get());
  if (!layout.ok()) return layout.status();
  if (*layout != source_layout)
    return absl::FailedPreconditionError("its layout from IR differs from its layout from source");
  if (program.program->kind == Component::Kind::kModule)
    return SameEntryPointCodes(session.session(), built->object.get(), program.target_index,
                               source_codes);
  ComPtr<ISlangBlob> code;
  ComPtr<ISlangBlob> diagnostics;
  const SlangResult result = built->object->getEntryPointCode(
      program.entry_point_index, program.target_index, code.WriteRef(), diagnostics.WriteRef());
  if (SLANG_FAILED(result) || !code) {
    return absl::InvalidArgumentError(fmt::format("Slang failed to generate its code from IR: {}",
                                                  BlobToString(diagnostics.get())));
  }
  return BlobToString(code.get());
}

}  // namespace spreplay
