#pragma once
// Record -> compile -> serve in one test process: the hooks' events go to a
// listener the test can swap (a trace recorder, then the archive's modules),
// and a recorded trace is compiled as `spreplay compile` compiles it.

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "archive/archive.h"
#include "compiler/compile_pipeline.h"
#include "recorder/trace_reader.h"
#include "recorder/trace_recorder.h"
#include "runtime/archive_kernels.h"
#include "tests/cpp/hooked_slang.h"

namespace spreplay {

// Forwards the hooks' events to a listener the test can swap: the hooks keep
// their listeners for the whole process, which runs other tests too.
class SwitchableListener final : public HookListener {
 public:
  void Use(HookListener* target) { target_ = target; }

  void OnToolchainKnown(const std::string& toolchain, const std::string& tag) override {
    if (target_) target_->OnToolchainKnown(toolchain, tag);
  }
  void OnSessionCreated(const SessionInfo& session) override {
    if (target_) target_->OnSessionCreated(session);
  }
  void OnModuleLoaded(const ComponentPtr& module, const std::vector<FileContent>& files) override {
    if (target_) target_->OnModuleLoaded(module, files);
  }
  void OnModuleRequested(const SessionInfo& session, const std::string& toolchain,
                         const ComponentPtr& module, double load_seconds) override {
    if (target_) target_->OnModuleRequested(session, toolchain, module, load_seconds);
  }
  void OnKernelCompiled(const KernelRequest& request, const void* code, size_t size,
                        double seconds) override {
    if (target_) target_->OnKernelCompiled(request, code, size, seconds);
  }
  ModuleDecision DecideModule(const ModuleLoadRequest& request, const ModuleFileReader& reader,
                              std::vector<ModuleFromIr>* plan, std::string* why) override {
    return target_ ? target_->DecideModule(request, reader, plan, why) : ModuleDecision::kPass;
  }
  void OnModuleNotServed(const ModuleLoadRequest& request, const std::string& why) override {
    if (target_) target_->OnModuleNotServed(request, why);
  }
  bool ServesModulesOf(const Digest& session_digest) override {
    return target_ && target_->ServesModulesOf(session_digest);
  }

 private:
  HookListener* target_ = nullptr;
};

inline SwitchableListener& Switch() {
  static SwitchableListener* listener = [] {
    Hooks();  // configures the hooks first
    auto* created = new SwitchableListener;
    AddHookListener(created);
    return created;
  }();
  return *listener;
}

// What a recorded app's archive holds: `record` runs the app's Slang calls
// with a trace recorder listening; the trace is compiled for sm_90.
struct Compiled {
  std::vector<Recording> recordings;
  CompileReport report;
  std::unique_ptr<Archive> archive;
};

inline absl::StatusOr<Compiled> RecordAndCompile(
    const std::filesystem::path& directory, const std::function<std::vector<Recording>()>& record) {
  const std::string trace_path = (directory / "trace.capnp").string();
  Compiled compiled;
  {
    absl::StatusOr<std::unique_ptr<TraceRecorder>> recorder =
        TraceRecorder::Open(trace_path, R"({"pid": 1})");
    if (!recorder.ok()) return recorder.status();
    Switch().Use(recorder->get());
    compiled.recordings = record();
    Switch().Use(nullptr);
  }
  absl::StatusOr<Trace> trace = Trace::Read(trace_path);
  if (!trace.ok()) return trace.status();
  CompileOptions options;
  options.arches = {90};
  options.jobs = 1;
  const std::string archive_path = (directory / "kernels.sprk").string();
  absl::StatusOr<CompileReport> report = CompileTrace(*trace, archive_path, options);
  if (!report.ok()) return report.status();
  compiled.report = *std::move(report);
  absl::StatusOr<Archive> archive = Archive::Open(archive_path);
  if (!archive.ok()) return archive.status();
  compiled.archive = std::make_unique<Archive>(*std::move(archive));
  return compiled;
}

// "call site: reason" for each of `misses`.
inline std::vector<std::string> Reasons(const std::vector<MissRecord>& misses) {
  std::vector<std::string> reasons;
  for (const MissRecord& miss : misses) reasons.push_back(miss.call_site + ": " + miss.reason);
  return reasons;
}

// "name: reason" for every module the archive says it did not archive.
inline std::vector<std::string> UnservedModules(const Archive& archive) {
  std::vector<std::string> unserved;
  for (const auto module : archive.index().getUnservedModules())
    unserved.push_back(fmt::format("{}: {}", module.getName().cStr(), module.getReason().cStr()));
  return unserved;
}

}  // namespace spreplay
