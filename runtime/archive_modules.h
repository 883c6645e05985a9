#pragma once
// Serves Slang modules from the IR an archive holds (schema ModuleEntry), in
// place of Slang's front end: a module request is answered only when every
// file the module was built from holds the recorded bytes where this
// process would read it, and its imports can be served or are loaded with
// the recorded content. Anything else loads from source, with the reason
// kept for the summary.

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "archive/archive.h"
#include "interpose/hook_listener.h"
#include "runtime/archive_kernels.h"

namespace spreplay {

class ArchiveModules final : public HookListener {
 public:
  // `archive` must outlive this. `strict`: a module that is not served fails to load.
  ArchiveModules(const Archive& archive, bool strict);

  ModuleDecision DecideModule(const ModuleLoadRequest& request, const ModuleFileReader& reader,
                              std::vector<ModuleFromIr>* plan, std::string* why) override;
  void OnToolchainKnown(const std::string& toolchain, const std::string& slang_build_tag) override;
  std::optional<std::string> RefuseUnservedModule(const ModuleLoadRequest& request,
                                                  const std::string& why) override;
  void OnModuleNotServed(const ModuleLoadRequest& request, const std::string& why) override;
  bool ServesModulesOf(const Digest& session_digest) override;

  std::vector<MissRecord> misses() const;
  size_t module_count() const { return archive_.index().getModules().size(); }

 private:
  struct Planning;
  struct Candidate {
    size_t position;  // in the archive's modules
    // Below a request directory: which of the recording's, and where it lies now.
    uint32_t request_index = 0;
    std::string request_directory;
  };
  // The archived modules a request for `requested` finds.
  std::vector<Candidate> RequestedAs(const SessionInfo& session,
                                     const std::string& requested) const;
  // The modules a wrapper the archive lacks imports, as far as they can be
  // served: loaded before Slang compiles the wrapper, they spare it their
  // front end.
  std::vector<ModuleFromIr> ServableImports(const ModuleLoadRequest& request,
                                            const ModuleFileReader& reader) const;
  // Why `request` has no module to serve, for a session of `session_digest`.
  std::string NoCandidate(const ModuleLoadRequest& request) const;
  // Adds module `position` of the archive, imports first, to `planning`;
  // "" or why it cannot be served.
  std::string Plan(size_t position, bool requested, Planning& planning) const;
  std::string PlanOnce(size_t position, bool requested, Planning& planning) const;
  // Why an import of `module` might now be another file (a new one beside
  // one of its files), or "".
  std::string ImportFoundBesideItsImporter(schema::ModuleEntry::Reader module,
                                           const Planning& planning) const;
  // Where this session's earlier requests by path put the recording's
  // request directories, by index; and remembering one.
  absl::flat_hash_map<uint32_t, std::string> RequestDirectoriesOf(
      const ModuleLoadRequest& request) const;
  void RememberRequestDirectory(const ModuleLoadRequest& request, uint32_t index,
                                const std::string& directory);

  const Archive& archive_;
  const bool strict_;
  std::string toolchain_;
  absl::flat_hash_map<Digest, size_t> by_key_;
  // One wrapper text may import different versions of a file (a hot reload
  // recorded): each version is a candidate.
  absl::flat_hash_map<Digest, std::vector<size_t>> by_source_;
  absl::flat_hash_map<std::pair<Digest, std::string>, std::vector<size_t>> by_request_;
  absl::flat_hash_set<Digest> sessions_;
  mutable std::mutex mutex_;
  bool other_toolchain_ = false;  // set once this process's toolchain is known
  // A module asked for by a path below no root is recorded below its
  // request's directory; the modules loaded after it (a call site's wrapper,
  // which names no path) find its files where that request found them.
  struct RequestDirectories {
    std::weak_ptr<const SessionInfo> session;  // an address is reused once a session goes
    absl::flat_hash_map<uint32_t, std::string> by_index;
  };
  absl::flat_hash_map<const SessionInfo*, RequestDirectories> request_directories_;
  std::vector<MissRecord> misses_;
};

}  // namespace spreplay
