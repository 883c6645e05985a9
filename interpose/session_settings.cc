#include "interpose/session_settings.h"

#include <algorithm>
#include <iterator>

#include "common/replace_all.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace spreplay {
namespace {

std::string ValueText(const CompilerOption& option, const std::string& slangpy_directory) {
  std::string text;
  switch (static_cast<slang::CompilerOptionValueKind>(option.kind)) {
    case slang::CompilerOptionValueKind::Int:
      text = option.int1 == 0 ? fmt::format("{}", option.int0)
                              : fmt::format("{}, {}", option.int0, option.int1);
      break;
    case slang::CompilerOptionValueKind::String:
      text = option.string1.empty() ? option.string0
                                    : fmt::format("{} {}", option.string0, option.string1);
      break;
  }
  if (!slangpy_directory.empty()) ReplaceAll(text, slangpy_directory, "<slangpy>");
  return text;
}

void AddOptions(const std::vector<CompilerOption>& options, const std::string& prefix,
                const std::string& slangpy_directory, std::vector<std::string>& lines) {
  for (const CompilerOption& option : options) {
    if (!IsKeyedOption(option)) continue;
    lines.push_back(fmt::format("{}{} = {}", prefix, CompilerOptionNameText(option.name),
                                ValueText(option, slangpy_directory)));
  }
}

}  // namespace

std::string CompilerOptionNameText(int32_t name) {
  using N = slang::CompilerOptionName;
  switch (static_cast<N>(name)) {
#define SPREPLAY_OPTION_NAME(x) \
  case N::x:                    \
    return #x;
    SPREPLAY_OPTION_NAME(MacroDefine)
    SPREPLAY_OPTION_NAME(Include)
    SPREPLAY_OPTION_NAME(MatrixLayoutColumn)
    SPREPLAY_OPTION_NAME(MatrixLayoutRow)
    SPREPLAY_OPTION_NAME(ZeroInitialize)
    SPREPLAY_OPTION_NAME(IgnoreCapabilities)
    SPREPLAY_OPTION_NAME(Profile)
    SPREPLAY_OPTION_NAME(Stage)
    SPREPLAY_OPTION_NAME(Target)
    SPREPLAY_OPTION_NAME(WarningsAsErrors)
    SPREPLAY_OPTION_NAME(DisableWarnings)
    SPREPLAY_OPTION_NAME(EnableWarning)
    SPREPLAY_OPTION_NAME(DisableWarning)
    SPREPLAY_OPTION_NAME(ReportDownstreamTime)
    SPREPLAY_OPTION_NAME(ReportPerfBenchmark)
    SPREPLAY_OPTION_NAME(SkipSPIRVValidation)
    SPREPLAY_OPTION_NAME(DisableShortCircuit)
    SPREPLAY_OPTION_NAME(MinimumSlangOptimization)
    SPREPLAY_OPTION_NAME(DisableNonEssentialValidations)
    SPREPLAY_OPTION_NAME(UnscopedEnum)
    SPREPLAY_OPTION_NAME(PreserveParameters)
    SPREPLAY_OPTION_NAME(Capability)
    SPREPLAY_OPTION_NAME(DisableDynamicDispatch)
    SPREPLAY_OPTION_NAME(DisableSpecialization)
    SPREPLAY_OPTION_NAME(FloatingPointMode)
    SPREPLAY_OPTION_NAME(DebugInformation)
    SPREPLAY_OPTION_NAME(LineDirectiveMode)
    SPREPLAY_OPTION_NAME(Optimization)
    SPREPLAY_OPTION_NAME(Obfuscate)
    SPREPLAY_OPTION_NAME(GLSLForceScalarLayout)
    SPREPLAY_OPTION_NAME(EnableEffectAnnotations)
    SPREPLAY_OPTION_NAME(DownstreamArgs)
    SPREPLAY_OPTION_NAME(DumpIntermediatePrefix)
    SPREPLAY_OPTION_NAME(DumpIntermediates)
    SPREPLAY_OPTION_NAME(NoMangle)
    SPREPLAY_OPTION_NAME(ValidateUniformity)
    SPREPLAY_OPTION_NAME(AllowGLSL)
    SPREPLAY_OPTION_NAME(EnableExperimentalPasses)
    SPREPLAY_OPTION_NAME(LoopInversion)
    SPREPLAY_OPTION_NAME(UseUpToDateBinaryModule)
    SPREPLAY_OPTION_NAME(ExperimentalFeature)
#undef SPREPLAY_OPTION_NAME
    default:
      return fmt::format("option {}", name);
  }
}

std::vector<std::string> KeyedSettings(const SessionConfig& config) {
  std::vector<std::string> lines;
  const std::string& slangpy = config.slangpy_directory;
  for (size_t i = 0; i < config.targets.size(); ++i) {
    const TargetConfig& target = config.targets[i];
    lines.push_back(fmt::format(
        "target {}: format {}, profile {}, flags {:#x}, floating point mode {}, line directives "
        "{}, scalar buffer layout {}",
        i, target.format, target.profile, target.flags, target.floating_point_mode,
        target.line_directive_mode, target.force_glsl_scalar_buffer_layout));
    AddOptions(target.options, fmt::format("target {}: ", i), slangpy, lines);
  }
  lines.push_back(fmt::format("session flags {:#x}, default matrix layout {}", config.flags,
                              config.default_matrix_layout_mode));
  for (const auto& [name, value] : config.macros)
    lines.push_back(fmt::format("define {} = {}", name, value));
  lines.push_back(fmt::format(
      "custom file system {}, effect annotations {}, GLSL syntax {}, skip SPIR-V validation {}",
      config.has_custom_file_system, config.enable_effect_annotations, config.allow_glsl_syntax,
      config.skip_spirv_validation));
  AddOptions(config.options, "", slangpy, lines);
  std::sort(lines.begin(), lines.end());
  return lines;
}

std::string DescribeSettingsChange(const std::vector<std::string>& archived,
                                   const std::vector<std::string>& current) {
  std::vector<std::string> added;
  std::vector<std::string> removed;
  std::set_difference(current.begin(), current.end(), archived.begin(), archived.end(),
                      std::back_inserter(added));
  std::set_difference(archived.begin(), archived.end(), current.begin(), current.end(),
                      std::back_inserter(removed));
  std::string text;
  if (!added.empty()) text = fmt::format("{} here", fmt::join(added, "; "));
  if (!removed.empty()) {
    text += fmt::format("{}{} in the archive", text.empty() ? "" : ", against ",
                        fmt::join(removed, "; "));
  }
  return text;
}

}  // namespace spreplay
