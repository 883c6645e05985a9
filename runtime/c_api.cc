#include "runtime/c_api.h"

#include <string>

#include "absl/status/status.h"
#include "interpose/slang_hooks.h"
#include "recorder/trace_recorder.h"
#include "runtime/kernel_table.h"

namespace spreplay {
namespace {

// Process-wide: the Python side talks to one native instance per process.
struct NativeState {
  std::string last_error;
  KernelTable kernels;
  spreplay_compile_callback compile_callback = nullptr;
  std::unique_ptr<TraceRecorder> recorder;
  bool configured = false;
};

NativeState& Native() {
  static NativeState* state = new NativeState;  // outlives Slang's exit-time teardown
  return *state;
}

int Fail(const absl::Status& status) {
  Native().last_error = std::string(status.message());
  return -1;
}

// Forwards compiles to the Python callback.
class CompileCallbackListener final : public HookListener {
 public:
  void OnKernelCompiled(const KernelRequest& request, const void* code, size_t size,
                        double seconds) override {
    spreplay_compile_callback callback = Native().compile_callback;
    if (!callback) return;
    const bool keyable = request.session && request.program->keyable;
    std::string entry_point;
    callback(keyable ? request.key.ToHex().c_str() : "", entry_point.c_str(), code, size, seconds);
  }
};

}  // namespace
}  // namespace spreplay

using spreplay::Native;

const char* spreplay_last_error(void) { return Native().last_error.c_str(); }

int spreplay_configure(const char* slang_library, const char* toolchain, int verbose) {
  spreplay::HookOptions options;
  options.slang_library = slang_library ? slang_library : "";
  options.toolchain = toolchain ? toolchain : "";
  options.verbose = verbose != 0;
  if (absl::Status status = spreplay::ConfigureSlangHooks(options); !status.ok())
    return spreplay::Fail(status);
  if (!Native().configured) {
    static spreplay::CompileCallbackListener* callback_listener = new spreplay::CompileCallbackListener;
    spreplay::AddHookListener(&Native().kernels);
    spreplay::AddHookListener(callback_listener);
    Native().configured = true;
  }
  return 0;
}

void spreplay_on_global_session(void* global_session, void*) {
  spreplay::OnGlobalSessionCreated(global_session);
}

int spreplay_add_kernel(const char* key_hex, const void* data, size_t size) {
  absl::StatusOr<spreplay::Digest> key = spreplay::Digest::FromHex(key_hex ? key_hex : "");
  if (!key.ok()) return spreplay::Fail(key.status());
  Native().kernels.Add(*key, std::string(static_cast<const char*>(data), size));
  return 0;
}

void spreplay_on_compile(spreplay_compile_callback callback) { Native().compile_callback = callback; }

void spreplay_counts(uint64_t* served, uint64_t* compiled, uint64_t* not_keyable) {
  spreplay::RequestCounts counts = Native().kernels.counts();
  if (served) *served = counts.served;
  if (compiled) *compiled = counts.compiled;
  if (not_keyable) *not_keyable = counts.not_keyable;
}

int spreplay_record_open(const char* path, const char* process_json) {
  if (Native().recorder) return spreplay::Fail(absl::FailedPreconditionError("already recording"));
  auto recorder = spreplay::TraceRecorder::Open(path ? path : "", process_json ? process_json : "");
  if (!recorder.ok()) return spreplay::Fail(recorder.status());
  Native().recorder = *std::move(recorder);
  spreplay::AddHookListener(Native().recorder.get());
  return 0;
}

int spreplay_record_json(const char* record_kind, const char* json) {
  if (!Native().recorder) return spreplay::Fail(absl::FailedPreconditionError("not recording"));
  absl::Status status = Native().recorder->RecordJson(record_kind ? record_kind : "", json ? json : "");
  return status.ok() ? 0 : spreplay::Fail(status);
}
