#include "runtime/c_api.h"

#include <atomic>
#include <cstring>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "archive/json_writer.h"
#include "interpose/slang_hooks.h"
#include "recorder/trace_recorder.h"
#include "runtime/archive_kernels.h"
#include "runtime/archive_modules.h"
#include "runtime/kernel_table.h"

namespace spreplay {
namespace {

// Process-wide: the Python side talks to one native instance per process.
struct NativeState {
  KernelTable kernels;
  std::atomic<spreplay_compile_callback> compile_callback = nullptr;
  std::unique_ptr<TraceRecorder> recorder;
  std::unique_ptr<ArchiveKernels> archive;
  std::unique_ptr<ArchiveModules> modules;
  std::unique_ptr<HookListener> refuse_all;
  bool configured = false;
};

NativeState& Native() {
  static NativeState* state = new NativeState;  // outlives Slang's exit-time teardown
  return *state;
}

// Per thread, so that a failure on one thread is never reported as another's.
std::string& LastError() {
  thread_local std::string last_error;
  return last_error;
}

int Fail(const absl::Status& status) {
  LastError() = std::string(status.message());
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

// Runs an API call; no C++ exception may cross into the caller (ctypes).
// An exception returns `on_exception` and leaves its text in last_error.
template <typename Call, typename Result = std::invoke_result_t<Call>>
Result Guarded(Call call, Result on_exception = -1) noexcept {
  try {
    return call();
  } catch (const std::exception& error) {
    LastError() = std::string("internal error: ") + error.what();
  } catch (...) {
    LastError() = "internal error";
  }
  return on_exception;
}

// Strict mode without a usable archive: nothing may compile.
class RefuseAll final : public HookListener {
 public:
  explicit RefuseAll(std::string reason) : reason_(std::move(reason)) {}
  KernelDecision DecideKernel(const KernelRequest&, ServedKernel*, std::string* refusal) override {
    *refusal = reason_;
    return KernelDecision::kRefuse;
  }

 private:
  std::string reason_;
};

// `misses` as an array under `key`, each naming what missed under `what`.
void WriteMisses(JsonWriter& json, std::string_view key, std::string_view what,
                 const std::vector<MissRecord>& misses) {
  json.Key(key).BeginArray();
  for (const MissRecord& miss : misses) {
    json.BeginObject()
        .Key(what)
        .String(miss.call_site)
        .Key("reason")
        .String(miss.reason)
        .Key("refused")
        .Bool(miss.refused)
        .EndObject();
  }
  json.EndArray();
}

// The counts and misses as JSON, copied into `buffer` (zero-terminated, cut
// to `size`); returns the full length.
size_t SummaryJson(char* buffer, size_t size) {
  const HookCounts counts = GetHookCounts();
  JsonWriter json;
  json.BeginObject();
  json.Key("served").Uint(counts.served);
  json.Key("compiled").Uint(counts.compiled);
  json.Key("notKeyable").Uint(counts.not_keyable);
  json.Key("refused").Uint(counts.refused);
  json.Key("modulesServed").Uint(counts.modules_served);
  json.Key("modulesCompiled").Uint(counts.modules_compiled);
  json.Key("modulesRefused").Uint(counts.modules_refused);
  if (const auto& archive = Native().archive) {
    json.Key("archive").String(archive->path());
    json.Key("archiveKernels").Uint(archive->kernel_count());
    json.Key("disabled").String(archive->disabled_reason());
    WriteMisses(json, "misses", "callSite", archive->misses());
  }
  if (const auto& modules = Native().modules) {
    json.Key("archiveModules").Uint(modules->module_count());
    WriteMisses(json, "moduleMisses", "module", modules->misses());
  }
  json.EndObject();
  const std::string& text = json.text();
  if (buffer && size > 0) {
    const size_t copied = std::min(text.size(), size - 1);
    std::memcpy(buffer, text.data(), copied);
    buffer[copied] = '\0';
  }
  return text.size();
}

}  // namespace
}  // namespace spreplay

using spreplay::Native;

const char* spreplay_last_error(void) { return spreplay::LastError().c_str(); }

const char* spreplay_patched_slots(void) {
  static const std::string* slots = new std::string(spreplay::PatchedSlotsText());
  return slots->c_str();
}

int spreplay_configure(const char* slang_library, const char* toolchain, int verbose) {
  return spreplay::Guarded([&]() -> int {
    spreplay::HookOptions options;
    options.slang_library = slang_library ? slang_library : "";
    options.toolchain = toolchain ? toolchain : "";
    options.verbose = verbose != 0;
    if (absl::Status status = spreplay::ConfigureSlangHooks(options); !status.ok())
      return spreplay::Fail(status);
    if (!Native().configured) {
      static spreplay::CompileCallbackListener* callback_listener =
          new spreplay::CompileCallbackListener;
      spreplay::AddHookListener(&Native().kernels);
      spreplay::AddHookListener(callback_listener);
      Native().configured = true;
    }
    return 0;
  });
}

void spreplay_on_global_session(void* global_session, void*) {
  spreplay::OnGlobalSessionCreated(global_session);
}

int spreplay_add_kernel(const char* key_hex, const void* data, size_t size) {
  return spreplay::Guarded([&]() -> int {
    absl::StatusOr<spreplay::Digest> key = spreplay::Digest::FromHex(key_hex ? key_hex : "");
    if (!key.ok()) return spreplay::Fail(key.status());
    Native().kernels.Add(*key, std::string(static_cast<const char*>(data), size));
    return 0;
  });
}

void spreplay_on_compile(spreplay_compile_callback callback) {
  Native().compile_callback = callback;
}

int spreplay_record_open(const char* path, const char* process_json) {
  return spreplay::Guarded([&]() -> int {
    if (Native().recorder)
      return spreplay::Fail(absl::FailedPreconditionError("already recording"));
    auto recorder =
        spreplay::TraceRecorder::Open(path ? path : "", process_json ? process_json : "");
    if (!recorder.ok()) return spreplay::Fail(recorder.status());
    Native().recorder = *std::move(recorder);
    spreplay::AddHookListener(Native().recorder.get());
    return 0;
  });
}

int spreplay_record_json(const char* record_kind, const char* json) {
  return spreplay::Guarded([&]() -> int {
    if (!Native().recorder) return spreplay::Fail(absl::FailedPreconditionError("not recording"));
    absl::Status status =
        Native().recorder->RecordJson(record_kind ? record_kind : "", json ? json : "");
    return status.ok() ? 0 : spreplay::Fail(status);
  });
}

int spreplay_serve_archive(const char* path, int strict, int strict_modules) {
  return spreplay::Guarded([&]() -> int {
    if (Native().archive)
      return spreplay::Fail(absl::FailedPreconditionError("already serving an archive"));
    spreplay::ServingOptions options;
    options.strict = strict != 0;
    auto archive = spreplay::ArchiveKernels::Open(path ? path : "", options);
    if (!archive.ok()) return spreplay::Fail(archive.status());
    Native().archive = *std::move(archive);
    Native().modules = std::make_unique<spreplay::ArchiveModules>(Native().archive->archive(),
                                                                  strict_modules != 0);
    spreplay::AddHookListener(Native().archive.get());
    spreplay::AddHookListener(Native().modules.get());
    return 0;
  });
}

void spreplay_refuse_all(const char* reason) {
  spreplay::Guarded([&] {
    if (Native().refuse_all) return 0;
    Native().refuse_all =
        std::make_unique<spreplay::RefuseAll>(reason ? reason : "spreplay refuses");
    spreplay::AddHookListener(Native().refuse_all.get());
    return 0;
  });
}

void spreplay_name_call_site(const char* wrapper_module, const char* module, const char* function,
                             const char* kind) {
  spreplay::Guarded([&] {
    if (!Native().archive || !wrapper_module || !module || !function || !kind) return 0;
    Native().archive->NameCallSite(wrapper_module, {module, function, kind});
    return 0;
  });
}

size_t spreplay_summary_json(char* buffer, size_t size) {
  return spreplay::Guarded([&] { return spreplay::SummaryJson(buffer, size); }, size_t{0});
}
