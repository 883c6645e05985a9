#include "replayer/program_builder.h"

#include "fmt/format.h"
#include "interpose/blobs.h"
#include "interpose/type_declarations.h"
#include "replayer/dependency_check.h"
#include "replayer/load_order.h"
#include "replayer/path_aliases.h"
#include "replayer/replayer_slang.h"
#include "replayer/tree_diff.h"

namespace spreplay {
namespace {

// The Slang the replayer loaded; a program is only built in a session of it,
// so it is there (an empty one, which finds nothing, keeps this total).
const SlangLibrary& Slang() {
  static const SlangLibrary none;
  absl::StatusOr<const SlangLibrary*> slang = ReplayerSlang();
  return slang.ok() ? **slang : none;
}

std::string TypeFullName(slang::TypeReflection* type) {
  return spreplay::TypeFullName(Slang().declarations, type);
}

// The one child of an entry point, renamed or specialised component, or linked
// program.
absl::StatusOr<ComponentPtr> OnlyChild(const Component& recorded) {
  if (recorded.children.size() != 1 || !recorded.children.front()) {
    return absl::InvalidArgumentError(fmt::format("recorded {} '{}' has {} children, not 1",
                                                  KindName(recorded.kind), recorded.name,
                                                  recorded.children.size()));
  }
  return recorded.children.front();
}

absl::Status Check(SlangResult result, ISlangBlob* diagnostics, const std::string& what) {
  if (SLANG_SUCCEEDED(result)) return absl::OkStatus();
  return absl::InvalidArgumentError(fmt::format("Slang failed to {} (0x{:08x}):\n{}", what,
                                                static_cast<uint32_t>(result),
                                                BlobToString(diagnostics)));
}

}  // namespace

absl::Status ProgramBuilder::LoadModules(const std::vector<ComponentPtr>& order) {
  for (const ComponentPtr& recorded : order) {
    absl::StatusOr<LoadedModule> loaded = session_.LoadModule(*recorded);
    if (!loaded.ok()) return loaded.status();
    built_[recorded.get()] = {ComPtr<slang::IComponentType>(loaded->module), loaded->description};
    modules_.push_back(loaded->module);
  }
  return absl::OkStatus();
}

absl::StatusOr<BuiltComponent> ProgramBuilder::Build(const ComponentPtr& recorded) {
  if (auto it = built_.find(recorded.get()); it != built_.end()) return it->second;
  absl::StatusOr<BuiltComponent> built = BuildNode(*recorded);
  if (built.ok()) built_[recorded.get()] = *built;
  return built;
}

absl::StatusOr<BuiltComponent> ProgramBuilder::BuildNode(const Component& recorded) {
  switch (recorded.kind) {
    case Component::Kind::kEntryPoint:
      return BuildEntryPoint(recorded);
    case Component::Kind::kTypeConformance:
      return BuildTypeConformance(recorded);
    case Component::Kind::kComposite:
      return BuildComposite(recorded);
    case Component::Kind::kRenamed:
      return BuildRenamed(recorded);
    case Component::Kind::kLinked:
      return BuildLinked(recorded);
    case Component::Kind::kModule:
      return absl::InternalError(fmt::format("module '{}' was not loaded", recorded.name));
    case Component::Kind::kSpecialized:
      return BuildSpecialized(recorded);
    case Component::Kind::kOpaque:
      break;
  }
  return absl::UnimplementedError(fmt::format(
      "the recording has a {} component, which cannot be replayed", KindName(recorded.kind)));
}

absl::StatusOr<BuiltComponent> ProgramBuilder::BuildEntryPoint(const Component& recorded) {
  absl::StatusOr<ComponentPtr> child = OnlyChild(recorded);
  if (!child.ok()) return child.status();
  absl::StatusOr<BuiltComponent> module = Build(*child);
  if (!module.ok()) return module.status();
  auto* slang_module = static_cast<slang::IModule*>(module->object.get());
  ComPtr<slang::IEntryPoint> entry_point;
  ComPtr<ISlangBlob> diagnostics;
  SlangResult result;
  if (recorded.stage == kFoundByName) {
    result = slang_module->findEntryPointByName(recorded.name.c_str(), entry_point.WriteRef());
  } else {
    result = slang_module->findAndCheckEntryPoint(recorded.name.c_str(),
                                                  static_cast<SlangStage>(recorded.stage),
                                                  entry_point.WriteRef(), diagnostics.WriteRef());
  }
  if (absl::Status status =
          Check(result, diagnostics.get(), fmt::format("find entry point '{}'", recorded.name));
      !status.ok()) {
    return status;
  }
  return BuiltComponent{ComPtr<slang::IComponentType>(entry_point.get()),
                        Component::EntryPoint(module->description, recorded.name, recorded.stage)};
}

absl::StatusOr<BuiltComponent> ProgramBuilder::BuildTypeConformance(const Component& recorded) {
  slang::TypeReflection* type = FindType(recorded.name);
  slang::TypeReflection* interface_type = FindType(recorded.interface_name);
  if (!type || !interface_type) {
    return absl::NotFoundError(fmt::format("no loaded module declares both '{}' and '{}'",
                                           recorded.name, recorded.interface_name));
  }
  ComPtr<slang::ITypeConformance> conformance;
  ComPtr<ISlangBlob> diagnostics;
  const SlangResult result = session_.session()->createTypeConformanceComponentType(
      type, interface_type, conformance.WriteRef(), recorded.conformance_id,
      diagnostics.WriteRef());
  if (absl::Status status =
          Check(result, diagnostics.get(),
                fmt::format("make '{}' conform to '{}'", recorded.name, recorded.interface_name));
      !status.ok()) {
    return status;
  }
  std::vector<SourceFile> declaring;
  if (slang::IModule* module = ModuleDeclaring(Slang().declarations, session_.session(), type)) {
    absl::StatusOr<ComponentPtr> described = session_.Describe(module);
    if (!described.ok()) return described.status();
    declaring = DeclaringFiles(**described);
  }
  return BuiltComponent{ComPtr<slang::IComponentType>(conformance.get()),
                        Component::TypeConformance(TypeFullName(type), TypeFullName(interface_type),
                                                   recorded.conformance_id, std::move(declaring))};
}

slang::TypeReflection* ProgramBuilder::FindType(const std::string& name) {
  for (auto it = modules_.rbegin(); it != modules_.rend(); ++it) {
    slang::ProgramLayout* layout = (*it)->getLayout();
    if (!layout || !Slang().find_type_by_name) continue;
    if (SlangReflectionType* type =
            Slang().find_type_by_name(reinterpret_cast<SlangReflection*>(layout), name.c_str()))
      return reinterpret_cast<slang::TypeReflection*>(type);
  }
  return nullptr;
}

absl::StatusOr<BuiltComponent> ProgramBuilder::BuildSpecialized(const Component& recorded) {
  absl::StatusOr<ComponentPtr> child = OnlyChild(recorded);
  if (!child.ok()) return child.status();
  absl::StatusOr<BuiltComponent> component = Build(*child);
  if (!component.ok()) return component.status();
  std::vector<slang::SpecializationArg> arguments;
  std::vector<std::string> described;
  for (const std::string& argument : recorded.specialization_args) {
    if (argument.starts_with("type ")) {
      slang::TypeReflection* type = FindType(argument.substr(5));
      if (!type) {
        return absl::NotFoundError(fmt::format(
            "no loaded module declares the type '{}' to specialise with", argument.substr(5)));
      }
      arguments.push_back(slang::SpecializationArg::fromType(type));
      described.push_back("type " + TypeFullName(type));
    } else if (argument.starts_with("expr ")) {
      arguments.push_back(slang::SpecializationArg::fromExpr(argument.c_str() + 5));
      described.push_back(argument);
    } else {
      return absl::InvalidArgumentError(
          fmt::format("unknown specialization argument '{}'", argument));
    }
  }
  ComPtr<slang::IComponentType> specialized;
  ComPtr<ISlangBlob> diagnostics;
  const SlangResult result =
      component->object->specialize(arguments.data(), static_cast<SlangInt>(arguments.size()),
                                    specialized.WriteRef(), diagnostics.WriteRef());
  if (absl::Status status = Check(result, diagnostics.get(), "specialise a component");
      !status.ok())
    return status;
  return BuiltComponent{specialized,
                        Component::Specialized(component->description, std::move(described))};
}

absl::StatusOr<BuiltComponent> ProgramBuilder::BuildComposite(const Component& recorded) {
  std::vector<ComPtr<slang::IComponentType>> objects;
  std::vector<slang::IComponentType*> raw;
  std::vector<ComponentPtr> descriptions;
  for (const ComponentPtr& child : recorded.children) {
    if (!child) return absl::InvalidArgumentError("recorded composite has a null child");
    absl::StatusOr<BuiltComponent> built = Build(child);
    if (!built.ok()) return built.status();
    raw.push_back(built->object.get());
    objects.push_back(built->object);
    descriptions.push_back(built->description);
  }
  ComPtr<slang::IComponentType> composite;
  ComPtr<ISlangBlob> diagnostics;
  const SlangResult result = session_.session()->createCompositeComponentType(
      raw.data(), static_cast<SlangInt>(raw.size()), composite.WriteRef(), diagnostics.WriteRef());
  if (absl::Status status = Check(result, diagnostics.get(), "compose the program"); !status.ok()) {
    return status;
  }
  return BuiltComponent{composite, Component::Composite(std::move(descriptions))};
}

absl::StatusOr<BuiltComponent> ProgramBuilder::BuildRenamed(const Component& recorded) {
  absl::StatusOr<ComponentPtr> child = OnlyChild(recorded);
  if (!child.ok()) return child.status();
  absl::StatusOr<BuiltComponent> entry_point = Build(*child);
  if (!entry_point.ok()) return entry_point.status();
  ComPtr<slang::IComponentType> renamed;
  const SlangResult result =
      entry_point->object->renameEntryPoint(recorded.name.c_str(), renamed.WriteRef());
  if (absl::Status status =
          Check(result, nullptr, fmt::format("rename an entry point to '{}'", recorded.name));
      !status.ok()) {
    return status;
  }
  return BuiltComponent{renamed, Component::Renamed(entry_point->description, recorded.name)};
}

absl::StatusOr<BuiltComponent> ProgramBuilder::BuildLinked(const Component& recorded) {
  absl::StatusOr<ComponentPtr> child = OnlyChild(recorded);
  if (!child.ok()) return child.status();
  absl::StatusOr<BuiltComponent> program = Build(*child);
  if (!program.ok()) return program.status();
  std::vector<slang::CompilerOptionEntry> entries;
  for (const CompilerOption& option : recorded.link_options) entries.push_back(option.ToEntry());
  ComPtr<slang::IComponentType> linked;
  ComPtr<ISlangBlob> diagnostics;
  const SlangResult result =
      program->object->linkWithOptions(linked.WriteRef(), static_cast<uint32_t>(entries.size()),
                                       entries.data(), diagnostics.WriteRef());
  if (absl::Status status = Check(result, diagnostics.get(), "link the program"); !status.ok())
    return status;
  return BuiltComponent{linked, Component::Linked(program->description, recorded.link_options)};
}

absl::StatusOr<BuiltComponent> BuildRecordedProgram(ReplaySession& session,
                                                    const ComponentPtr& program,
                                                    const Snapshot& snapshot) {
  if (absl::Status status = session.Admit(snapshot); !status.ok()) return status;
  if (absl::Status status = AddDirectoryAliases(program, session.files()); !status.ok())
    return status;
  absl::StatusOr<std::vector<ComponentPtr>> modules =
      ModuleLoadOrder(program, snapshot.string_modules, [&](const Component& module) {
        if (module.source) return module.path;
        return session.files().Canonical(module.path).value_or(module.path);
      });
  if (!modules.ok()) return modules.status();
  if (absl::Status status = CheckDependencies(*modules, session); !status.ok()) return status;
  ProgramBuilder builder(session);
  if (absl::Status status = builder.LoadModules(*modules); !status.ok()) return status;
  absl::StatusOr<BuiltComponent> built = builder.Build(program);
  if (!built.ok()) return built.status();
  if (absl::Status status = CheckSameContent(program, built->description); !status.ok())
    return status;
  return built;
}

}  // namespace spreplay
