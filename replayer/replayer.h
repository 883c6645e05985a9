#pragma once
// Rebuilds a recorded kernel offline, without a GPU: recreates the Slang
// session from its recorded configuration over a snapshot of the files it
// read, rebuilds the recorded component tree with the calls the application
// made, checks that what it built has the recorded content digests, and asks
// Slang for the entry point's code. With the same Slang (and NVRTC, for PTX)
// the code is byte-identical to what the application got.
//
// Not thread-safe: one Replayer replays one kernel at a time.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "interpose/component.h"
#include "interpose/session_config.h"
#include "replayer/com_ptr.h"
#include "replayer/session_cache.h"
#include "replayer/snapshot.h"
#include "slang.h"

namespace spreplay {

struct ReplayerOptions {
  // Directory holding libnvrtc.so. Empty: $CUDA_HOME/lib64 or
  // /usr/local/cuda/lib64, whichever has it; none is an error only for
  // kernels that need NVRTC (Slang then reports it).
  std::string nvrtc_directory;
  // Replay kernels of one session configuration in one Slang session, so
  // that shared modules are loaded once.
  bool reuse_sessions = true;
  size_t max_cached_sessions = 4;
};

struct ReplayedKernel {
  // The blob getEntryPointCode returned, byte for byte (Slang's PTX blobs
  // end with a NUL, as the recorded ones do).
  std::string code;
  // Session creation, module loading, composition and linking.
  double front_end_seconds = 0;
  // getEntryPointCode: Slang's back end plus the downstream compiler.
  double codegen_seconds = 0;
  bool reused_session = false;
};

// The build tag of the Slang library this process links, which the recorded
// toolchain string must contain for a replay to reproduce the recorded code.
// Needs no global session.
std::string SlangBuildTag();

// A global session as sgl creates one, with NVRTC from `options` (or where
// DefaultNvrtcDirectory finds it).
absl::StatusOr<ComPtr<slang::IGlobalSession>> CreateGlobalSession(const ReplayerOptions& options);

class Replayer {
 public:
  static absl::StatusOr<std::unique_ptr<Replayer>> Create(ReplayerOptions options = {});

  // `linked_program` is the recorded kLinked component whose entry point's
  // code `config`'s session produced for target `target_index`.
  absl::StatusOr<ReplayedKernel> Replay(const SessionConfig& config,
                                        const ComponentPtr& linked_program,
                                        int64_t entry_point_index, int64_t target_index,
                                        const Snapshot& snapshot);

 private:
  absl::StatusOr<ReplayedKernel> ReplayUncontained(const SessionConfig& config,
                                                   const ComponentPtr& linked_program,
                                                   int64_t entry_point_index, int64_t target_index,
                                                   const Snapshot& snapshot);
  explicit Replayer(ReplayerOptions options)
      : options_(std::move(options)), sessions_(options_.max_cached_sessions) {}

  absl::StatusOr<ReplayedKernel> ReplayIn(ReplaySession& session, const ComponentPtr& program,
                                          int64_t entry_point_index, int64_t target_index,
                                          const Snapshot& snapshot);

  ReplayerOptions options_;
  ComPtr<slang::IGlobalSession> global_session_;
  SessionCache sessions_;
};

}  // namespace spreplay
