#include "interpose/session_config.h"

#include <algorithm>

#include "interpose/key_hasher.h"

namespace spreplay {
SessionConfig SessionConfig::From(const slang::SessionDesc& desc, std::string slangpy_directory) {
  SessionConfig config;
  config.slangpy_directory = std::move(slangpy_directory);
  for (SlangInt i = 0; i < desc.targetCount; ++i) {
    const slang::TargetDesc& target = desc.targets[i];
    TargetConfig copy;
    copy.format = target.format;
    copy.profile = target.profile;
    copy.flags = target.flags;
    copy.floating_point_mode = target.floatingPointMode;
    copy.line_directive_mode = target.lineDirectiveMode;
    copy.force_glsl_scalar_buffer_layout = target.forceGLSLScalarBufferLayout;
    copy.options = CopyOptions(target.compilerOptionEntries, target.compilerOptionEntryCount);
    config.targets.push_back(std::move(copy));
  }
  config.flags = desc.flags;
  config.default_matrix_layout_mode = desc.defaultMatrixLayoutMode;
  for (SlangInt i = 0; i < desc.searchPathCount; ++i)
    config.search_paths.emplace_back(desc.searchPaths[i]);
  for (SlangInt i = 0; i < desc.preprocessorMacroCount; ++i) {
    const slang::PreprocessorMacroDesc& macro = desc.preprocessorMacros[i];
    config.macros.emplace_back(macro.name ? macro.name : "", macro.value ? macro.value : "");
  }
  config.has_custom_file_system = desc.fileSystem != nullptr;
  config.enable_effect_annotations = desc.enableEffectAnnotations;
  config.allow_glsl_syntax = desc.allowGLSLSyntax;
  config.skip_spirv_validation = desc.skipSPIRVValidation;
  config.options = CopyOptions(desc.compilerOptionEntries, desc.compilerOptionEntryCount);
  return config;
}

bool SessionConfig::HasDebugInformation() const {
  auto has = [](const std::vector<CompilerOption>& entries) {
    return std::any_of(entries.begin(), entries.end(), [](const CompilerOption& option) {
      return option.name == static_cast<int32_t>(slang::CompilerOptionName::DebugInformation) &&
             option.int0 != 0;
    });
  };
  return has(options) ||
         std::any_of(targets.begin(), targets.end(),
                     [&](const TargetConfig& target) { return has(target.options); });
}

Digest SessionConfig::ContentDigest() const {
  KeyHasher hasher("spreplay.session.v2");
  hasher.Integer(static_cast<int64_t>(targets.size()));
  for (const TargetConfig& target : targets) {
    hasher.Integer(target.format).Integer(target.profile).Integer(target.flags);
    hasher.Integer(target.floating_point_mode).Integer(target.line_directive_mode);
    hasher.Integer(target.force_glsl_scalar_buffer_layout);
    HashKeyedOptions(hasher, target.options, slangpy_directory);
  }
  hasher.Integer(flags).Integer(default_matrix_layout_mode);
  hasher.Integer(static_cast<int64_t>(macros.size()));
  for (const auto& [name, value] : macros) hasher.Text(name).Text(value);
  hasher.Integer(has_custom_file_system).Integer(enable_effect_annotations);
  hasher.Integer(allow_glsl_syntax).Integer(skip_spirv_validation);
  HashKeyedOptions(hasher, options, slangpy_directory);
  return hasher.Finish();
}

Digest SessionConfig::LocationDigest() const { return LocationDigest(ContentDigest()); }

Digest SessionConfig::LocationDigest(const Digest& content_digest) const {
  KeyHasher hasher("spreplay.session-location.v1");
  hasher.Hash(content_digest);
  hasher.Text(slangpy_directory);
  hasher.Integer(static_cast<int64_t>(search_paths.size()));
  for (const std::string& path : search_paths) hasher.Text(path);
  auto hash_locations = [&hasher](const std::vector<CompilerOption>& options) {
    for (const CompilerOption& option : options) {
      if (!IsLocationOption(option)) continue;
      hasher.Integer(option.name).Text(option.string0).Text(option.string1);
    }
  };
  for (const TargetConfig& target : targets) hash_locations(target.options);
  hash_locations(options);
  // Traces from before the working directory was recorded keep their digests.
  if (!working_directory.empty()) hasher.Text("working directory").Text(working_directory);
  return hasher.Finish();
}

SessionDescView::SessionDescView(const SessionConfig& config) {
  for (const TargetConfig& target : config.targets) {
    std::vector<slang::CompilerOptionEntry> entries;
    for (const CompilerOption& option : target.options) entries.push_back(option.ToEntry());
    target_options_.push_back(std::move(entries));
  }
  for (size_t i = 0; i < config.targets.size(); ++i) {
    const TargetConfig& target = config.targets[i];
    slang::TargetDesc desc;
    desc.format = static_cast<SlangCompileTarget>(target.format);
    desc.profile = static_cast<SlangProfileID>(target.profile);
    desc.flags = target.flags;
    desc.floatingPointMode = static_cast<SlangFloatingPointMode>(target.floating_point_mode);
    desc.lineDirectiveMode = static_cast<SlangLineDirectiveMode>(target.line_directive_mode);
    desc.forceGLSLScalarBufferLayout = target.force_glsl_scalar_buffer_layout;
    desc.compilerOptionEntries = target_options_[i].data();
    desc.compilerOptionEntryCount = static_cast<uint32_t>(target_options_[i].size());
    targets_.push_back(desc);
  }
  for (const std::string& path : config.search_paths) search_paths_.push_back(path.c_str());
  for (const auto& [name, value] : config.macros) macros_.push_back({name.c_str(), value.c_str()});
  for (const CompilerOption& option : config.options) options_.push_back(option.ToEntry());
  desc_.targets = targets_.data();
  desc_.targetCount = static_cast<SlangInt>(targets_.size());
  desc_.flags = config.flags;
  desc_.defaultMatrixLayoutMode =
      static_cast<SlangMatrixLayoutMode>(config.default_matrix_layout_mode);
  desc_.searchPaths = search_paths_.data();
  desc_.searchPathCount = static_cast<SlangInt>(search_paths_.size());
  desc_.preprocessorMacros = macros_.data();
  desc_.preprocessorMacroCount = static_cast<SlangInt>(macros_.size());
  desc_.enableEffectAnnotations = config.enable_effect_annotations;
  desc_.allowGLSLSyntax = config.allow_glsl_syntax;
  desc_.compilerOptionEntries = options_.data();
  desc_.compilerOptionEntryCount = static_cast<uint32_t>(options_.size());
  desc_.skipSPIRVValidation = config.skip_spirv_validation;
}

}  // namespace spreplay
