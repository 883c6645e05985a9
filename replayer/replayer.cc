#include "replayer/replayer.h"

#include <chrono>

#include "common/contained_call.h"
#include "common/seconds_since.h"
#include "fmt/format.h"
#include "interpose/blobs.h"
#include "replayer/nvrtc_location.h"
#include "replayer/program_builder.h"
#include "replayer/recorded_working_directory.h"
#include "replayer/replayer_slang.h"

namespace spreplay {
namespace {

using Clock = std::chrono::steady_clock;

absl::Status CheckReplayable(const ComponentPtr& program) {
  if (!program || program->kind != Component::Kind::kLinked) {
    return absl::InvalidArgumentError(fmt::format("a kernel comes from a linked program, not a {}",
                                                  program ? KindName(program->kind) : "null"));
  }
  if (!program->keyable) {
    return absl::FailedPreconditionError(
        "the recorded program contains components the hooks could not see");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ComPtr<slang::IGlobalSession>> CreateGlobalSession(const ReplayerOptions& options) {
  absl::StatusOr<const SlangLibrary*> slang = ReplayerSlang();
  if (!slang.ok()) return slang.status();
  ComPtr<slang::IGlobalSession> global_session;
  SlangGlobalSessionDesc desc = {};  // sgl creates its global session with the defaults too
  if (SLANG_FAILED((*slang)->create_global_session(&desc, global_session.WriteRef())) ||
      !global_session) {
    return absl::InternalError("cannot create a Slang global session");
  }
  const std::string nvrtc_directory = options.nvrtc_directory.empty()
                                          ? DefaultNvrtcDirectory().value_or("")
                                          : options.nvrtc_directory;
  if (!nvrtc_directory.empty()) {
    if (absl::Status status = UseNvrtc(global_session.get(), nvrtc_directory); !status.ok())
      return status;
  }
  return global_session;
}

absl::StatusOr<std::unique_ptr<Replayer>> Replayer::Create(ReplayerOptions options) {
  absl::StatusOr<ComPtr<slang::IGlobalSession>> global_session = CreateGlobalSession(options);
  if (!global_session.ok()) return global_session.status();
  std::unique_ptr<Replayer> replayer(new Replayer(std::move(options)));
  replayer->global_session_ = *std::move(global_session);
  return replayer;
}

std::string SlangBuildTag() {
  absl::StatusOr<const SlangLibrary*> slang = ReplayerSlang();
  const char* tag = slang.ok() ? (*slang)->build_tag() : nullptr;
  return tag ? tag : "";
}

absl::StatusOr<ReplayedKernel> Replayer::Replay(const SessionConfig& config,
                                                const ComponentPtr& linked_program,
                                                int64_t entry_point_index, int64_t target_index,
                                                const Snapshot& snapshot) {
  // A session Slang threw in is dropped as the exception leaves it.
  return Contained("replaying the kernel", [&] {
    return ReplayUncontained(config, linked_program, entry_point_index, target_index, snapshot);
  });
}

absl::StatusOr<ReplayedKernel> Replayer::ReplayUncontained(const SessionConfig& config,
                                                           const ComponentPtr& linked_program,
                                                           int64_t entry_point_index,
                                                           int64_t target_index,
                                                           const Snapshot& snapshot) {
  if (absl::Status status = CheckReplayable(linked_program); !status.ok()) return status;
  const Digest key = config.LocationDigest();
  if (options_.reuse_sessions) {
    if (std::unique_ptr<ReplaySession> cached = sessions_.Take(key)) {
      absl::StatusOr<ReplayedKernel> kernel =
          ReplayIn(*cached, linked_program, entry_point_index, target_index, snapshot);
      if (kernel.ok()) {
        kernel->reused_session = true;
        if (!cached->spent()) sessions_.Put(key, std::move(cached));
        return kernel;
      }
      // Whatever went wrong may be the reused session's doing (a file it
      // holds with other bytes, a module it loaded differently); a fresh
      // session has the final word.
    }
  }
  const Clock::time_point start = Clock::now();
  absl::StatusOr<std::unique_ptr<ReplaySession>> session =
      ReplaySession::Create(global_session_.get(), config);
  if (!session.ok()) return session.status();
  const double setup_seconds = SecondsSince(start);
  absl::StatusOr<ReplayedKernel> kernel =
      ReplayIn(**session, linked_program, entry_point_index, target_index, snapshot);
  if (!kernel.ok()) return kernel;
  kernel->front_end_seconds += setup_seconds;
  if (options_.reuse_sessions && !(*session)->spent()) sessions_.Put(key, *std::move(session));
  return kernel;
}

absl::StatusOr<ReplayedKernel> Replayer::ReplayIn(ReplaySession& session,
                                                  const ComponentPtr& program,
                                                  int64_t entry_point_index, int64_t target_index,
                                                  const Snapshot& snapshot) {
  // Slang and NVRTC see the directory the app's process saw (debug info).
  const RecordedWorkingDirectory working_directory(session.working_directory());
  const Clock::time_point start = Clock::now();
  // Witness tables of dynamic dispatch get sequential ids from a counter in
  // the Slang session that no API resets, so a session that compiled such a
  // program is no longer equivalent to a fresh one.
  if (HasTypeConformance(program)) session.MarkSpent();

  ReplayedKernel kernel;
  absl::StatusOr<BuiltComponent> built = BuildRecordedProgram(session, program, snapshot);
  if (!built.ok()) return built.status();
  kernel.front_end_seconds = SecondsSince(start);

  const Clock::time_point codegen_start = Clock::now();
  ComPtr<ISlangBlob> code;
  ComPtr<ISlangBlob> diagnostics;
  const SlangResult result = built->object->getEntryPointCode(
      entry_point_index, target_index, code.WriteRef(), diagnostics.WriteRef());
  kernel.codegen_seconds = SecondsSince(codegen_start);
  if (SLANG_FAILED(result) || !code) {
    return absl::InvalidArgumentError(
        fmt::format("Slang failed to generate code for entry point {} of target {} (0x{:08x}):\n{}",
                    entry_point_index, target_index, static_cast<uint32_t>(result),
                    BlobToString(diagnostics.get())));
  }
  kernel.code = BlobToString(code.get());
  return kernel;
}

}  // namespace spreplay
