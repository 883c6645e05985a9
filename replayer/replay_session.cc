#include "replayer/replay_session.h"

#include <algorithm>

#include "common/replace_all.h"
#include "fmt/format.h"
#include "interpose/blobs.h"
#include "interpose/module_keys.h"
#include "replayer/replayer_slang.h"

namespace spreplay {
namespace {

// Where the slangpy whose Slang this process runs is installed.
std::string LocalSlangpyDirectory() {
  absl::StatusOr<const SlangLibrary*> slang = ReplayerSlang();
  return slang.ok() ? (*slang)->Directory() : "";
}

// `config` with the recording's slangpy directory named as this machine's:
// sgl passes paths inside it to Slang (NVRTC's -I for the OptiX headers), and
// keys already take one slangpy version's files to be the same anywhere.
SessionConfig WithLocalSlangpy(SessionConfig config) {
  const std::string local = LocalSlangpyDirectory();
  const std::string recorded = config.slangpy_directory;
  if (local.empty() || recorded.empty() || local == recorded) return config;
  // Only whole path elements: "/a/slangpy" must not turn "/a/slangpy2" into "<local>2".
  auto relocate_text = [&](std::string& text) {
    ReplaceAll(text, recorded + "/", local + "/");
    if (text == recorded || text.ends_with(recorded)) {
      text.replace(text.size() - recorded.size(), recorded.size(), local);
    }
  };
  auto relocate = [&](std::vector<CompilerOption>& options) {
    for (CompilerOption& option : options) {
      if (IsLocationOption(option)) continue;
      relocate_text(option.string0);
      relocate_text(option.string1);
    }
  };
  relocate(config.options);
  for (TargetConfig& target : config.targets) relocate(target.options);
  config.slangpy_directory = local;
  return config;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ReplaySession>> ReplaySession::Create(
    slang::IGlobalSession* global_session, const SessionConfig& recorded_config) {
  const SessionConfig config = WithLocalSlangpy(recorded_config);
  std::unique_ptr<ReplaySession> replay(new ReplaySession);
  replay->working_directory_ = config.working_directory;
  replay->files_ = SnapshotFileSystem::Create(config.working_directory);
  // Search paths existed when the kernel was recorded, even those where no
  // file was found.
  for (const std::string& path : config.search_paths) replay->files_->AddDirectory(path);
  auto add_includes = [&](const std::vector<CompilerOption>& options) {
    for (const CompilerOption& option : options) {
      if (option.name == static_cast<int32_t>(slang::CompilerOptionName::Include))
        replay->files_->AddDirectory(option.string0);
    }
  };
  add_includes(config.options);
  for (const TargetConfig& target : config.targets) add_includes(target.options);

  SessionDescView view(config);
  slang::SessionDesc desc = view.desc();
  desc.fileSystem = replay->files_.get();
  if (SLANG_FAILED(global_session->createSession(desc, replay->session_.WriteRef())) ||
      !replay->session_) {
    return absl::InternalError("Slang refused to create a session from the recorded config");
  }
  return replay;
}

absl::Status ReplaySession::Admit(const Snapshot& snapshot) {
  return files_->Admit(snapshot.files);
}

std::optional<Digest> ReplaySession::DependencyDigest(const std::string& path) {
  if (auto it = string_modules_.find(path); it != string_modules_.end()) return it->second;
  if (auto it = file_digests_.find(path); it != file_digests_.end()) return it->second;
  std::shared_ptr<const std::string> bytes = files_->Find(path);
  if (!bytes) return std::nullopt;
  // Files are never replaced (SnapshotFileSystem::Admit), so the memo holds.
  const Digest digest = Sha256Of(*bytes);
  file_digests_.emplace(path, digest);
  return digest;
}

absl::StatusOr<ComponentPtr> ReplaySession::Describe(slang::IModule* module) {
  if (auto it = adopted_.find(module); it != adopted_.end()) return it->second;
  auto request = requests_.find(module);
  return DescribeLoadedModule(module,
                              request == requests_.end() ? ModuleRequest{} : request->second,
                              [this](const std::string& path) -> absl::StatusOr<Digest> {
                                if (std::optional<Digest> digest = DependencyDigest(path))
                                  return *digest;
                                return absl::NotFoundError("the replay cannot account for it");
                              });
}

absl::StatusOr<slang::IModule*> ReplaySession::LoadFromIr(const ComponentPtr& recorded,
                                                          std::string_view ir) {
  auto blob = ComPtr<ISlangBlob>::Adopt(NewBorrowedBlob(ir.data(), ir.size()));
  ComPtr<ISlangBlob> diagnostics;
  slang::IModule* module = session_->loadModuleFromIRBlob(
      recorded->name.c_str(), recorded->path.empty() ? nullptr : recorded->path.c_str(), blob.get(),
      diagnostics.WriteRef());
  if (!module) {
    return absl::InvalidArgumentError(fmt::format("Slang could not load module '{}' from IR:\n{}",
                                                  recorded->name, BlobToString(diagnostics.get())));
  }
  adopted_[module] = recorded;
  if (recorded->source) string_modules_.insert_or_assign(recorded->path, recorded->digest);
  return module;
}

absl::StatusOr<LoadedModule> ReplaySession::LoadModule(const Component& recorded) {
  ModuleRequest request;
  ComPtr<ISlangBlob> blob;
  slang::IModule* module = nullptr;
  if (recorded.source) {
    request.source = recorded.source;
    request.path = IsPseudoPath(recorded.path) ? "" : recorded.path;
    module = session_->loadModuleFromSourceString(
        recorded.name.c_str(), request.path.empty() ? nullptr : request.path.c_str(),
        recorded.source->c_str(), blob.WriteRef());
  } else {
    request.requested_name = recorded.requested_name;
    module = session_->loadModule(recorded.requested_name.c_str(), blob.WriteRef());
  }
  if (!module) {
    return absl::InvalidArgumentError(fmt::format("Slang failed to load module '{}':\n{}",
                                                  recorded.name, BlobToString(blob.get())));
  }
  if (auto it = adopted_.find(module); it != adopted_.end())
    return LoadedModule{module, it->second};
  const ModuleRequest& first = requests_.try_emplace(module, std::move(request)).first->second;
  absl::StatusOr<ComponentPtr> description = DescribeLoadedModule(
      module, first, [this](const std::string& path) -> absl::StatusOr<Digest> {
        if (std::optional<Digest> digest = DependencyDigest(path)) return *digest;
        return absl::NotFoundError("the replay cannot account for it");
      });
  if (!description.ok()) return description.status();
  if ((*description)->path != recorded.path) {
    return absl::FailedPreconditionError(
        fmt::format("module '{}' has path '{}' where the recording had '{}'", recorded.name,
                    (*description)->path, recorded.path));
  }
  if (first.source) string_modules_.insert_or_assign((*description)->path, (*description)->digest);
  return LoadedModule{module, *std::move(description)};
}

}  // namespace spreplay
