#pragma once
// Everything a slang::SessionDesc says, copied out so that it outlives the call
// that carried it: the recorder stores it, the replayer rebuilds the session
// from it, and both the runtime and the compiler derive the session's key from it.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/sha256.h"
#include "interpose/compiler_option.h"
#include "slang.h"

namespace spreplay {

struct TargetConfig {
  int32_t format = 0;   // SlangCompileTarget
  int32_t profile = 0;  // SlangProfileID
  uint32_t flags = 0;
  int32_t floating_point_mode = 0;
  int32_t line_directive_mode = 0;
  bool force_glsl_scalar_buffer_layout = false;
  std::vector<CompilerOption> options;
};

struct SessionConfig {
  std::vector<TargetConfig> targets;
  uint32_t flags = 0;
  int32_t default_matrix_layout_mode = 0;
  std::vector<std::string> search_paths;
  std::vector<std::pair<std::string, std::string>> macros;
  bool has_custom_file_system = false;
  bool enable_effect_annotations = false;
  bool allow_glsl_syntax = false;
  bool skip_spirv_validation = false;
  std::vector<CompilerOption> options;
  // Where the slangpy that created the session is installed. sgl passes paths
  // inside it to Slang (NVRTC's -I for OptiX headers); their content is fixed
  // by the slangpy version, which every key holds, so keys name the place
  // "<slangpy>" instead and survive another install location.
  std::string slangpy_directory;
  // The working directory of the process that created the session, as the
  // compilers in it saw it (WorkingDirectoryAsToolsSeeIt). Slang resolves
  // relative module and include paths against it, and NVRTC writes it into
  // PTX with debug information. Replay only: keys never hold a path.
  std::string working_directory;

  static SessionConfig From(const slang::SessionDesc& desc, std::string slangpy_directory);

  // Whether the session or one of its targets compiles with debug information,
  // which puts source locations into the code.
  bool HasDebugInformation() const;

  // The content key of the configuration: every field except the locations
  // Slang searches (search paths and include options). What those locations
  // yielded is keyed by content, per module.
  Digest ContentDigest() const;

  // ContentDigest plus where Slang searches and the working directory: two
  // sessions that differ only in their include paths produce the same code
  // from the same files, but must be replayed with their own paths to find
  // those files.
  Digest LocationDigest() const;
  // The same, given this config's ContentDigest().
  Digest LocationDigest(const Digest& content_digest) const;
};

// A SessionDesc view of a SessionConfig. The config must outlive it.
class SessionDescView {
 public:
  explicit SessionDescView(const SessionConfig& config);
  const slang::SessionDesc& desc() const { return desc_; }

 private:
  std::vector<std::vector<slang::CompilerOptionEntry>> target_options_;
  std::vector<slang::TargetDesc> targets_;
  std::vector<const char*> search_paths_;
  std::vector<slang::PreprocessorMacroDesc> macros_;
  std::vector<slang::CompilerOptionEntry> options_;
  slang::SessionDesc desc_;
};

}  // namespace spreplay
