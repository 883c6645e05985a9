// Builds a kernel archive (layout in archive/archive_format.h, index in schema/archive.capnp)
// from compiled kernels and publishes it atomically.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/sha256.h"
#include "schema/archive.capnp.h"

namespace spreplay {

// Describes the archive as a whole. Nothing here takes part in kernel keys.
struct ArchiveProvenance {
  std::string toolchain;         // e.g. "slangpy 0.43.1 slang 2026.12"
  std::string spreplay_version;  // e.g. "0.1.0"
  // Left to the caller rather than read from the clock, so builds can be byte-reproducible (0).
  int64_t created_unix_seconds = 0;
  std::string host;
  std::string command;
};

struct KernelCallSite {
  std::string module_name;
  std::string function_name;
  std::string call_kind;  // "call", "bwds", "dispatch", ...
  std::string wrapper_module_name;
  std::string entry_point_name;
};

struct KernelDependency {
  Digest digest;
  std::string recorded_path;  // Provenance only.
};

// Everything about a kernel except its binaries; mirrors schema::KernelEntry.
struct KernelMetadata {
  Digest key;
  KernelCallSite call_site;
  std::vector<KernelDependency> manifest;
  Digest session_digest;
  Digest program_digest;
  std::vector<uint32_t> sass_arches;
  uint32_t ptx_arch = 0;
  bool optix = false;  // served as its PTX, see schema::KernelEntry::optix
};

// A recorded kernel `spreplay compile` could not build; mirrors schema::UnbuiltKernel.
struct UnbuiltKernel {
  Digest key;
  KernelCallSite call_site;
  std::string reason;
};

// A file a serialized module depends on, named below a root (interpose/path_roots.h).
struct ArchivedModuleFile {
  Digest digest;  // unset for a module's own path
  schema::PathRoot root = schema::PathRoot::ABSOLUTE;
  uint32_t root_index = 0;
  std::string relative_path;
  std::string recorded_path;
};

// Everything about a serialized module except its IR; mirrors schema::ModuleEntry.
struct ModuleMetadata {
  Digest key;
  Digest content_digest;
  Digest session_digest;
  std::string name;
  std::string requested_name;
  std::optional<Digest> source_lookup;  // modules loaded from a string
  std::string path;                     // modules loaded from a string
  ArchivedModuleFile file_path;         // file modules
  std::vector<ArchivedModuleFile> files;
  std::vector<Digest> imports;
  std::optional<ArchivedModuleFile> requested_file;  // requested by absolute path
  schema::ModuleVerification verified_by = schema::ModuleVerification::KERNELS;
};

// A recorded module `spreplay compile` could not archive as IR; mirrors schema::UnservedModule.
struct UnservedModule {
  Digest session_digest;
  std::string name;
  std::string reason;
};

struct KernelBinary {
  schema::BlobKind kind = schema::BlobKind::UNSPECIFIED;
  uint32_t arch = 0;  // 0 for the fatbin.
  std::vector<std::byte> bytes;
};

// Collects kernels in memory, then writes them in one go. Not thread-safe.
class ArchiveWriter {
 public:
  explicit ArchiveWriter(ArchiveProvenance provenance);

  // Adds a kernel. Its binaries must include exactly one FATBIN (arch 0), which is what the
  // runtime serves (an OptiX program: exactly one PTX and no FATBIN), and at most one blob per
  // kind and arch; none may be empty.
  //
  // A key added twice keeps the LAST kernel added. Keys name content, so a repeat is a rebuild of
  // the same kernel (e.g. merging a fresh compile over an older one) and the newest build is the
  // one to keep; rejecting it would make every merge dedupe first.
  absl::Status Add(KernelMetadata metadata, std::vector<KernelBinary> binaries);

  // Records why a kernel is missing, for the runtime's miss messages. A key both added and
  // unbuilt (two traces, two outcomes) is served, and not listed here.
  void AddUnbuilt(UnbuiltKernel kernel);

  // The readable settings of the session `digest` names (interpose/session_settings.h).
  void AddSessionSettings(const Digest& digest, std::vector<std::string> settings);
  // Adds a serialized module; a key added twice keeps the last, as for kernels.
  void AddModule(ModuleMetadata metadata, std::string ir);
  // Records why a module is not served. Listed unless a module of that session and name is added.
  void AddUnservedModule(UnservedModule module);
  size_t module_count() const { return modules_.size(); }

  size_t kernel_count() const { return kernels_.size(); }

  // Writes every kernel added so far to `path`, replacing any existing file atomically: a reader
  // opening `path` meanwhile sees the old archive or the new one, never a mix. On failure `path`
  // is untouched and no temporary file is left behind. Identical blobs (by SHA-256) are stored
  // once and shared by every entry that uses them.
  absl::Status Write(const std::string& path) const;

 private:
  struct Kernel {
    KernelMetadata metadata;
    std::vector<KernelBinary> binaries;
  };

  ArchiveProvenance provenance_;
  std::map<Digest, Kernel> kernels_;  // Ordered because the index must be sorted by key.
  std::map<Digest, UnbuiltKernel> unbuilt_;
  std::map<Digest, std::vector<std::string>> session_settings_;
  struct Module {
    ModuleMetadata metadata;
    std::string ir;
  };
  std::map<Digest, Module> modules_;
  std::map<std::pair<Digest, std::string>, std::string> unserved_modules_;
};

}  // namespace spreplay
