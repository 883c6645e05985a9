#pragma once
// Writes a trace while a slangpy app runs: listens to the Slang hooks for
// sessions, modules and compiled kernels, and takes call-site and device
// descriptions from slangpy's Python layer as JSON.
//
// Every record goes to disk as soon as it is complete, one frame per record,
// so a process killed at any moment leaves a readable trace of everything it
// finished. Content-addressed records (sessions, files, components) are
// written once per process; other processes appending to the same file may
// repeat them, which readers and `spreplay merge` de-duplicate.

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "interpose/hook_listener.h"
#include "recorder/trace_log.h"

namespace capnp {
class MessageBuilder;
}

namespace spreplay {

class TraceRecorder final : public HookListener {
 public:
  // `process_json` fills the Process record (schema/trace.capnp) written once
  // the toolchain is known.
  static absl::StatusOr<std::unique_ptr<TraceRecorder>> Open(const std::string& path,
                                                             std::string process_json);

  void OnToolchainKnown(const std::string& toolchain, const std::string& slang_build_tag) override;
  void OnSessionCreated(const SessionInfo& session) override;
  void OnModuleLoaded(const ComponentPtr& module, const std::vector<FileContent>& files) override;
  void OnModuleRequested(const SessionInfo& session, const std::string& toolchain,
                         const ComponentPtr& module, double load_seconds) override;
  void OnKernelCompiled(const KernelRequest& request, const void* code, size_t size,
                        double seconds) override;

  // Records a `callSite` or `device` described in JSON by the Python hooks.
  absl::Status RecordJson(std::string_view record_kind, std::string_view json);

 private:
  TraceRecorder(TraceLogWriter writer, std::string process_json);

  void WriteComponentTree(const ComponentPtr& component);  // callers hold mutex_
  void Append(capnp::MessageBuilder& message);             // callers hold mutex_
  void Report(const absl::Status& status);                 // callers hold mutex_

  mutable std::mutex mutex_;
  TraceLogWriter writer_;
  std::string process_json_;
  absl::flat_hash_set<Digest> written_;
  // Modules from strings written, by digest and name (moduleVariant records).
  absl::flat_hash_set<std::pair<Digest, std::string>> written_modules_;
  // Module loads written (moduleLoad records), by session location, module
  // digest and name.
  absl::flat_hash_set<std::tuple<Digest, Digest, std::string>> written_loads_;
  // Toolchains this process has announced: sgl creates a global session per
  // device, and each reports its toolchain.
  absl::flat_hash_set<std::string> announced_;
  bool failed_ = false;
};

}  // namespace spreplay
