#include "recorder/record_encoding.h"

#include "common/fmt_absl.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

void EncodeOptions(const std::vector<CompilerOption>& options,
                   capnp::List<trace_schema::CompilerOption>::Builder out) {
  for (size_t i = 0; i < options.size(); ++i) {
    auto entry = out[i];
    entry.setName(options[i].name);
    entry.setKind(options[i].kind);
    entry.setInt0(options[i].int0);
    entry.setInt1(options[i].int1);
    entry.setString0(options[i].string0);
    entry.setString1(options[i].string1);
  }
}

std::vector<CompilerOption> DecodeOptions(
    capnp::List<trace_schema::CompilerOption>::Reader records) {
  std::vector<CompilerOption> options;
  options.reserve(records.size());
  for (auto record : records) {
    options.push_back({record.getName(), record.getKind(), record.getInt0(), record.getInt1(),
                       record.getString0(), record.getString1()});
  }
  return options;
}

Component::Kind KindOf(trace_schema::Component::Kind kind) {
  switch (kind) {
    case trace_schema::Component::Kind::MODULE:
      return Component::Kind::kModule;
    case trace_schema::Component::Kind::ENTRY_POINT:
      return Component::Kind::kEntryPoint;
    case trace_schema::Component::Kind::TYPE_CONFORMANCE:
      return Component::Kind::kTypeConformance;
    case trace_schema::Component::Kind::COMPOSITE:
      return Component::Kind::kComposite;
    case trace_schema::Component::Kind::LINKED:
      return Component::Kind::kLinked;
    case trace_schema::Component::Kind::RENAMED:
      return Component::Kind::kRenamed;
    case trace_schema::Component::Kind::SPECIALIZED:
      return Component::Kind::kSpecialized;
    case trace_schema::Component::Kind::OPAQUE:
      return Component::Kind::kOpaque;
  }
  return Component::Kind::kOpaque;
}

trace_schema::Component::Kind RecordKindOf(Component::Kind kind) {
  switch (kind) {
    case Component::Kind::kModule:
      return trace_schema::Component::Kind::MODULE;
    case Component::Kind::kEntryPoint:
      return trace_schema::Component::Kind::ENTRY_POINT;
    case Component::Kind::kTypeConformance:
      return trace_schema::Component::Kind::TYPE_CONFORMANCE;
    case Component::Kind::kComposite:
      return trace_schema::Component::Kind::COMPOSITE;
    case Component::Kind::kLinked:
      return trace_schema::Component::Kind::LINKED;
    case Component::Kind::kRenamed:
      return trace_schema::Component::Kind::RENAMED;
    case Component::Kind::kSpecialized:
      return trace_schema::Component::Kind::SPECIALIZED;
    case Component::Kind::kOpaque:
      return trace_schema::Component::Kind::OPAQUE;
  }
  return trace_schema::Component::Kind::OPAQUE;
}

}  // namespace

void EncodeSession(const SessionConfig& config, trace_schema::Session::Builder out) {
  const Digest content = config.ContentDigest();
  out.setDigest(DataOf(content));
  out.setLocationDigest(DataOf(config.LocationDigest(content)));
  auto targets = out.initTargets(config.targets.size());
  for (size_t i = 0; i < config.targets.size(); ++i) {
    const TargetConfig& target = config.targets[i];
    auto record = targets[i];
    record.setFormat(target.format);
    record.setProfile(target.profile);
    record.setFlags(target.flags);
    record.setFloatingPointMode(target.floating_point_mode);
    record.setLineDirectiveMode(target.line_directive_mode);
    record.setForceGlslScalarBufferLayout(target.force_glsl_scalar_buffer_layout);
    EncodeOptions(target.options, record.initOptions(target.options.size()));
  }
  out.setFlags(config.flags);
  out.setDefaultMatrixLayoutMode(config.default_matrix_layout_mode);
  auto paths = out.initSearchPaths(config.search_paths.size());
  for (size_t i = 0; i < config.search_paths.size(); ++i) paths.set(i, config.search_paths[i]);
  auto macros = out.initMacros(config.macros.size());
  for (size_t i = 0; i < config.macros.size(); ++i) {
    macros[i].setName(config.macros[i].first);
    macros[i].setValue(config.macros[i].second);
  }
  out.setHasCustomFileSystem(config.has_custom_file_system);
  out.setEnableEffectAnnotations(config.enable_effect_annotations);
  out.setAllowGlslSyntax(config.allow_glsl_syntax);
  out.setSkipSpirvValidation(config.skip_spirv_validation);
  EncodeOptions(config.options, out.initOptions(config.options.size()));
  out.setSlangpyDirectory(config.slangpy_directory);
  out.setWorkingDirectory(config.working_directory);
}

absl::StatusOr<SessionConfig> DecodeSession(trace_schema::Session::Reader record) {
  SessionConfig config;
  for (auto target : record.getTargets()) {
    config.targets.push_back({target.getFormat(), target.getProfile(), target.getFlags(),
                              target.getFloatingPointMode(), target.getLineDirectiveMode(),
                              target.getForceGlslScalarBufferLayout(),
                              DecodeOptions(target.getOptions())});
  }
  config.flags = record.getFlags();
  config.default_matrix_layout_mode = record.getDefaultMatrixLayoutMode();
  for (auto path : record.getSearchPaths()) config.search_paths.emplace_back(path);
  for (auto macro : record.getMacros())
    config.macros.emplace_back(macro.getName(), macro.getValue());
  config.has_custom_file_system = record.getHasCustomFileSystem();
  config.enable_effect_annotations = record.getEnableEffectAnnotations();
  config.allow_glsl_syntax = record.getAllowGlslSyntax();
  config.skip_spirv_validation = record.getSkipSpirvValidation();
  config.options = DecodeOptions(record.getOptions());
  config.slangpy_directory = record.getSlangpyDirectory();
  config.working_directory = record.getWorkingDirectory();
  absl::StatusOr<Digest> claimed = DigestFromData(record.getDigest());
  if (!claimed.ok()) return claimed.status();
  const bool has_location = record.hasLocationDigest();
  absl::StatusOr<Digest> claimed_location =
      DigestFromData(has_location ? record.getLocationDigest() : record.getDigest());
  if (!claimed_location.ok()) return claimed_location.status();
  const Digest content = config.ContentDigest();
  if (content != *claimed ||
      (has_location && config.LocationDigest(content) != *claimed_location)) {
    return absl::DataLossError(fmt::format(
        "session record {} does not hash to its digest: the trace is damaged or was written by an "
        "incompatible spreplay (record it again with this one)",
        claimed->ToHex().substr(0, 16)));
  }
  return config;
}

void EncodeComponent(const Component& component, trace_schema::Component::Builder out) {
  out.setDigest(DataOf(component.digest));
  out.setKind(RecordKindOf(component.kind));
  out.setName(component.name);
  out.setPath(component.path);
  out.setRequestedName(component.requested_name);
  out.setHasSource(component.source.has_value());
  if (component.source) out.setSource(*component.source);
  auto dependencies = out.initDependencies(component.dependencies.size());
  for (size_t i = 0; i < component.dependencies.size(); ++i) {
    dependencies[i].setPath(component.dependencies[i].path);
    dependencies[i].setDigest(DataOf(component.dependencies[i].content));
  }
  out.setStage(component.stage);
  out.setInterfaceName(component.interface_name);
  out.setConformanceId(component.conformance_id);
  EncodeOptions(component.link_options, out.initLinkOptions(component.link_options.size()));
  auto arguments = out.initSpecializationArgs(component.specialization_args.size());
  for (size_t i = 0; i < component.specialization_args.size(); ++i)
    arguments.set(i, component.specialization_args[i]);
  auto children = out.initChildren(component.children.size());
  for (size_t i = 0; i < component.children.size(); ++i)
    children.set(i, DataOf(component.children[i]->digest));
}

absl::StatusOr<ComponentPtr> DecodeComponent(trace_schema::Component::Reader record,
                                             const ChildResolver& child) {
  absl::StatusOr<Digest> claimed = DigestFromData(record.getDigest());
  if (!claimed.ok()) return claimed.status();
  std::vector<ComponentPtr> children;
  for (auto child_digest : record.getChildren()) {
    absl::StatusOr<Digest> digest = DigestFromData(child_digest);
    if (!digest.ok()) return digest.status();
    absl::StatusOr<ComponentPtr> resolved = child(*digest);
    if (!resolved.ok()) return resolved.status();
    children.push_back(*std::move(resolved));
  }
  auto need_children = [&](size_t count) -> absl::Status {
    if (children.size() == count) return absl::OkStatus();
    return absl::DataLossError(fmt::format("component {} has {} children, a {} has {}",
                                           claimed->ToHex().substr(0, 16), children.size(),
                                           KindName(KindOf(record.getKind())), count));
  };
  std::vector<SourceFile> dependencies;
  for (auto dependency : record.getDependencies()) {
    absl::StatusOr<Digest> digest = DigestFromData(dependency.getDigest());
    if (!digest.ok()) return digest.status();
    dependencies.push_back({dependency.getPath(), *digest});
  }
  ComponentPtr component;
  switch (KindOf(record.getKind())) {
    case Component::Kind::kModule: {
      std::optional<std::string> source;
      if (record.getHasSource()) source = std::string(record.getSource());
      component = Component::Module(record.getName(), record.getPath(), record.getRequestedName(),
                                    std::move(source), std::move(dependencies));
      break;
    }
    case Component::Kind::kEntryPoint:
      if (absl::Status status = need_children(1); !status.ok()) return status;
      component = Component::EntryPoint(children[0], record.getName(), record.getStage());
      break;
    case Component::Kind::kTypeConformance:
      component = Component::TypeConformance(record.getName(), record.getInterfaceName(),
                                             record.getConformanceId(), std::move(dependencies));
      break;
    case Component::Kind::kComposite:
      component = Component::Composite(std::move(children));
      break;
    case Component::Kind::kLinked:
      if (absl::Status status = need_children(1); !status.ok()) return status;
      component = Component::Linked(children[0], DecodeOptions(record.getLinkOptions()));
      break;
    case Component::Kind::kRenamed:
      if (absl::Status status = need_children(1); !status.ok()) return status;
      component = Component::Renamed(children[0], record.getName());
      break;
    case Component::Kind::kSpecialized: {
      if (absl::Status status = need_children(1); !status.ok()) return status;
      std::vector<std::string> arguments;
      for (auto argument : record.getSpecializationArgs()) arguments.emplace_back(argument);
      component = Component::Specialized(children[0], std::move(arguments));
      break;
    }
    case Component::Kind::kOpaque:
      return absl::FailedPreconditionError(
          fmt::format("component {} is {}: Slang made it out of sight of the recorder",
                      claimed->ToHex().substr(0, 16), KindName(KindOf(record.getKind()))));
  }
  if (component->digest != *claimed) {
    return absl::DataLossError(fmt::format(
        "{} record {} does not hash to its digest: the trace is damaged or was written by an "
        "incompatible spreplay (record it again with this one)",
        KindName(component->kind), claimed->ToHex().substr(0, 16)));
  }
  return component;
}

}  // namespace spreplay
