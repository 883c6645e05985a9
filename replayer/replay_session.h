#pragma once
// One Slang session rebuilt from a recorded SessionConfig, compiling against
// a snapshot file system, together with what the replayer knows about the
// modules loaded into it. A session can serve several kernels of the same
// configuration; everything here exists to make sure that reusing it can
// never give a kernel other code than a fresh session would.

#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/sha256.h"
#include "interpose/component.h"
#include "interpose/module_description.h"
#include "interpose/session_config.h"
#include "replayer/com_ptr.h"
#include "replayer/snapshot.h"
#include "replayer/snapshot_file_system.h"
#include "slang.h"

namespace spreplay {

struct LoadedModule {
  slang::IModule* module = nullptr;  // owned by the session
  ComponentPtr description;          // as the Slang hooks would describe it
};

class ReplaySession {
 public:
  static absl::StatusOr<std::unique_ptr<ReplaySession>> Create(
      slang::IGlobalSession* global_session, const SessionConfig& config);

  slang::ISession* session() const { return session_.get(); }
  SnapshotFileSystem& files() const { return *files_.get(); }
  // The recording process's working directory ("" if not recorded).
  const std::string& working_directory() const { return working_directory_; }

  // Makes the snapshot's files visible to Slang. Fails, adding nothing, when
  // they contradict what the session already served.
  absl::Status Admit(const Snapshot& snapshot);

  // Loads the recorded module the way the application did, or finds it
  // loaded already.
  absl::StatusOr<LoadedModule> LoadModule(const Component& recorded);

  // The digest of a dependency path as the hooks saw it: a string module's
  // pseudo path, or a file of the snapshot.
  std::optional<Digest> DependencyDigest(const std::string& path);

  // Describes any module the session holds: as first requested, or, for one
  // Slang loaded for an import, as the hooks would describe it unrequested.
  absl::StatusOr<ComponentPtr> Describe(slang::IModule* module);

  // Loads `recorded` from its serialized IR under its recorded name and path,
  // and answers later requests for it with `recorded` as its description.
  // `ir` must outlive the session.
  absl::StatusOr<slang::IModule*> LoadFromIr(const ComponentPtr& recorded, std::string_view ir);

  // Set once the session's state may differ from a fresh session's in a way
  // no digest shows (see Replayer); a spent session is not reused.
  void MarkSpent() { spent_ = true; }
  bool spent() const { return spent_; }

 private:
  ReplaySession() = default;

  std::string working_directory_;
  ComPtr<SnapshotFileSystem> files_;
  ComPtr<slang::ISession> session_;
  // How each module was first handed to Slang: Slang returns the module it
  // already has for a known name or path, whatever a later request says.
  absl::flat_hash_map<slang::IModule*, ModuleRequest> requests_;
  // Modules loaded from strings, by the pseudo path Slang named them with.
  absl::flat_hash_map<std::string, Digest> string_modules_;
  absl::flat_hash_map<std::string, Digest> file_digests_;
  // Modules loaded from IR, described as recorded.
  absl::flat_hash_map<slang::IModule*, ComponentPtr> adopted_;
  bool spent_ = false;
};

}  // namespace spreplay
