#pragma once
// Drives real Slang the way sgl does for a CUDA device, with spreplay's hooks
// installed, and captures what the hooks report: the harness of the tests
// that record kernels in-process (no GPU needed; NVRTC makes the PTX).

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "interpose/blobs.h"
#include "interpose/hook_listener.h"
#include "interpose/slang_hooks.h"
#include "replayer/com_ptr.h"
#include "replayer/nvrtc_location.h"
#include "replayer/recorded_working_directory.h"
#include "replayer/replayer.h"
#include "slang.h"

namespace spreplay {

constexpr const char* kSlangPackageDir = SPREPLAY_SLANG_PACKAGE_DIR;
constexpr const char* kSlangLibrary = SPREPLAY_SLANG_LIBRARY;
// NVRTC from $CUDA_HOME (the CUDA compilers `make setup` installed) or the
// system toolkit.
inline std::string NvrtcDirectory() {
  return DefaultNvrtcDirectory().value_or("/usr/local/cuda/lib64");
}

// ---------------------------------------------------------------------------------------------
// Capturing what the hooks report

// One kernel as the hooks saw it being compiled, with the files its session read.
struct Recording {
  SessionConfig config;
  ComponentPtr program;
  int64_t entry_point_index = 0;
  int64_t target_index = 0;
  std::string code;
  Snapshot snapshot;
};

class CaptureListener : public HookListener {
 public:
  void Start() {
    std::lock_guard lock(mutex_);
    capturing_ = true;
    snapshot_ = {};
    kernels_.clear();
  }

  // Every kernel compiled since Start, each with every file read since Start.
  std::vector<Recording> Stop() {
    std::lock_guard lock(mutex_);
    capturing_ = false;
    for (Recording& kernel : kernels_) kernel.snapshot = snapshot_;
    return std::move(kernels_);
  }

  void OnModuleLoaded(const ComponentPtr& module, const std::vector<FileContent>& files) override {
    std::lock_guard lock(mutex_);
    if (!capturing_) return;
    // The hooks hand over file bytes by content; the module names their paths.
    for (const SourceFile& dependency : module->dependencies) {
      for (const FileContent& file : files) {
        if (file.digest == dependency.content) snapshot_.files[dependency.path] = file.bytes;
      }
    }
    if (module->source) snapshot_.string_modules.push_back(module);
  }

  void OnKernelCompiled(const KernelRequest& request, const void* code, size_t size,
                        double seconds) override {
    std::lock_guard lock(mutex_);
    if (!capturing_ || !request.session) return;
    Recording kernel;
    kernel.config = request.session->config;
    kernel.program = request.program;
    kernel.entry_point_index = request.entry_point_index;
    kernel.target_index = request.target_index;
    kernel.code.assign(static_cast<const char*>(code), size);
    kernels_.push_back(std::move(kernel));
  }

 private:
  std::mutex mutex_;
  bool capturing_ = false;
  Snapshot snapshot_;
  std::vector<Recording> kernels_;
};

// The hooks patch the vtables of Slang's classes for the whole process and
// call their listeners until it exits, so there is one listener, never
// destroyed. The patch reaches every Slang object of the process, the
// replayer's too: the listener only captures between Start and Stop.
inline CaptureListener& Hooks() {
  static CaptureListener* listener = [] {
    auto* created = new CaptureListener;
    HookOptions options;
    options.toolchain = "replayer-test";
    options.verbose = getenv("SPREPLAY_TEST_VERBOSE") != nullptr;
    options.slang_library = kSlangLibrary;
    absl::Status status = ConfigureSlangHooks(options);
    EXPECT_TRUE(status.ok()) << status;
    AddHookListener(created);
    return created;
  }();
  return *listener;
}

// A global session as slangpy gets it: created through the wheel's library,
// handed to the hooks like the shim does.
inline ComPtr<slang::IGlobalSession> NewHookedGlobalSession() {
  Hooks();
  ComPtr<slang::IGlobalSession> global_session;
  SlangGlobalSessionDesc desc = {};
  EXPECT_EQ(slang_createGlobalSession2(&desc, global_session.WriteRef()), SLANG_OK);
  absl::Status nvrtc = UseNvrtc(global_session.get(), NvrtcDirectory());
  EXPECT_TRUE(nvrtc.ok()) << nvrtc;
  OnGlobalSessionCreated(global_session.get());
  return global_session;
}

// ---------------------------------------------------------------------------------------------
// Driving Slang the way sgl does for a CUDA device (src/sgl/device/shader.cpp)

// The session options, macros and target sgl's SlangSession::create_session
// passes for a CUDA device with default SlangCompilerOptions.
class SglCudaSessionDesc {
 public:
  // `module_cache_directories`: as with slangpy's module_cache_path, which
  // puts a cache directory per include path ahead of them all and lets Slang
  // load the modules it finds there.
  SglCudaSessionDesc(slang::IGlobalSession* global_session,
                     const std::vector<std::string>& include_paths, int debug_info,
                     const std::vector<std::string>& module_cache_directories = {}) {
    Int(slang::CompilerOptionName::MatrixLayoutRow, 1);
    for (const char* warning : {"30856", "41012", "31010", "30051", "31106", "31107"})
      String(slang::CompilerOptionName::DisableWarning, warning);
    Int(slang::CompilerOptionName::ReportDownstreamTime, 0);
    Int(slang::CompilerOptionName::ReportPerfBenchmark, 0);
    Int(slang::CompilerOptionName::SkipSPIRVValidation, 0);
    Int(slang::CompilerOptionName::DebugInformation, debug_info);
    Int(slang::CompilerOptionName::Optimization, SLANG_OPTIMIZATION_LEVEL_DEFAULT);
    Int(slang::CompilerOptionName::DumpIntermediates, 0);
    String(slang::CompilerOptionName::DumpIntermediatePrefix, "");
    Int(slang::CompilerOptionName::Capability, global_session->findCapability("hlsl_nvapi"));
    Int(slang::CompilerOptionName::LoopInversion, 1);
    if (!module_cache_directories.empty())
      Int(slang::CompilerOptionName::UseUpToDateBinaryModule, 1);
    for (const std::string& path : module_cache_directories)
      String(slang::CompilerOptionName::Include, path);
    for (const std::string& path : include_paths) String(slang::CompilerOptionName::Include, path);
    for (const auto& [name, value] :
         std::vector<std::pair<const char*, const char*>>{{"__TARGET_CUDA__", "1"},
                                                          {"__SHADER_TARGET_MAJOR", "6"},
                                                          {"__SHADER_TARGET_MINOR", "6"},
                                                          {"SGL_ENABLE_NVAPI", "0"},
                                                          {"SGL_ENABLE_PRINT", "0"}}) {
      String(slang::CompilerOptionName::MacroDefine, name, value);
    }
    target_options_.push_back(IntEntry(slang::CompilerOptionName::FloatingPointMode, 0));
    target_options_.push_back(IntEntry(slang::CompilerOptionName::GLSLForceScalarLayout, 1));
    target_.format = SLANG_PTX;
    target_.floatingPointMode = SLANG_FLOATING_POINT_MODE_DEFAULT;
    target_.forceGLSLScalarBufferLayout = true;
    target_.compilerOptionEntries = target_options_.data();
    target_.compilerOptionEntryCount = static_cast<uint32_t>(target_options_.size());
    desc_.targets = &target_;
    desc_.targetCount = 1;
    desc_.compilerOptionEntries = options_.data();
    desc_.compilerOptionEntryCount = static_cast<uint32_t>(options_.size());
  }
  SglCudaSessionDesc(const SglCudaSessionDesc&) = delete;

  const slang::SessionDesc& desc() const { return desc_; }

 private:
  static slang::CompilerOptionEntry IntEntry(slang::CompilerOptionName name, int value) {
    slang::CompilerOptionEntry entry{};
    entry.name = name;
    entry.value.kind = slang::CompilerOptionValueKind::Int;
    entry.value.intValue0 = value;
    return entry;
  }
  void Int(slang::CompilerOptionName name, int value) { options_.push_back(IntEntry(name, value)); }
  void String(slang::CompilerOptionName name, const std::string& first,
              const std::string& second = "") {
    strings_.push_back(std::make_unique<std::string>(first));
    strings_.push_back(std::make_unique<std::string>(second));
    slang::CompilerOptionEntry entry{};
    entry.name = name;
    entry.value.kind = slang::CompilerOptionValueKind::String;
    entry.value.stringValue0 = strings_[strings_.size() - 2]->c_str();
    entry.value.stringValue1 = strings_.back()->c_str();
    options_.push_back(entry);
  }

  std::vector<std::unique_ptr<std::string>> strings_;
  std::vector<slang::CompilerOptionEntry> options_;
  std::vector<slang::CompilerOptionEntry> target_options_;
  slang::TargetDesc target_{};
  slang::SessionDesc desc_{};
};

inline std::string Diagnostics(const ComPtr<ISlangBlob>& blob) { return BlobToString(blob.get()); }

// Links a composite the way sgl does and asks for its first entry point's code.
inline absl::StatusOr<std::string> LinkAndGenerate(slang::IComponentType* composite,
                                                   slang::CompilerOptionEntry* options,
                                                   uint32_t count) {
  ComPtr<ISlangBlob> diagnostics;
  ComPtr<slang::IComponentType> linked;
  if (SLANG_FAILED(
          composite->linkWithOptions(linked.WriteRef(), count, options, diagnostics.WriteRef())))
    return absl::InternalError("link: " + Diagnostics(diagnostics));
  ComPtr<ISlangBlob> code;
  if (SLANG_FAILED(linked->getEntryPointCode(0, 0, code.WriteRef(), diagnostics.WriteRef())))
    return absl::InternalError("codegen: " + Diagnostics(diagnostics));
  return BlobToString(code.get());
}

// Composes `parts` the way sgl does, links and generates the first entry point.
inline absl::StatusOr<std::string> ComposeAndGenerate(slang::ISession* session,
                                                      std::vector<slang::IComponentType*> parts,
                                                      slang::CompilerOptionEntry* options = nullptr,
                                                      uint32_t count = 0) {
  ComPtr<ISlangBlob> diagnostics;
  ComPtr<slang::IComponentType> composite;
  if (SLANG_FAILED(
          session->createCompositeComponentType(parts.data(), static_cast<SlangInt>(parts.size()),
                                                composite.WriteRef(), diagnostics.WriteRef())))
    return absl::InternalError("compose: " + Diagnostics(diagnostics));
  return LinkAndGenerate(composite.get(), options, count);
}

// The options slangpy links a call site's program with: dump_intermediates
// off and a prefix naming the call.
class SlangpyLinkOptions {
 public:
  explicit SlangpyLinkOptions(const std::string& wrapper_name)
      : prefix_(wrapper_name + "_compute") {
    options_[0].name = slang::CompilerOptionName::DumpIntermediates;
    options_[0].value.kind = slang::CompilerOptionValueKind::Int;
    options_[1].name = slang::CompilerOptionName::DumpIntermediatePrefix;
    options_[1].value.kind = slang::CompilerOptionValueKind::String;
    options_[1].value.stringValue0 = prefix_.c_str();
  }
  SlangpyLinkOptions(const SlangpyLinkOptions&) = delete;

  slang::CompilerOptionEntry* data() { return options_; }
  uint32_t count() const { return 2; }

 private:
  std::string prefix_;
  slang::CompilerOptionEntry options_[2] = {};
};

// A slangpy call site: a generated wrapper module that imports the user's
// module, linked with it. Compiles one kernel in `session` and returns its code.
inline absl::StatusOr<std::string> CompileCallSite(slang::ISession* session,
                                                   const std::string& user_module,
                                                   const std::string& wrapper_name,
                                                   const std::string& wrapper_body) {
  ComPtr<ISlangBlob> diagnostics;
  // sgl's resolve_module_name turns "user" into "user.slang" when that file
  // exists in an include path, and loads the module by that name.
  slang::IModule* user = session->loadModule(user_module.c_str(), diagnostics.WriteRef());
  if (!user) return absl::InternalError("loadModule: " + Diagnostics(diagnostics));
  // sgl prefixes generated source with a comment naming the module, and
  // passes no path.
  const std::string source = fmt::format("// {}\n{}", wrapper_name, wrapper_body);
  slang::IModule* wrapper = session->loadModuleFromSourceString(
      wrapper_name.c_str(), nullptr, source.c_str(), diagnostics.WriteRef());
  if (!wrapper) return absl::InternalError("wrapper: " + Diagnostics(diagnostics));
  ComPtr<slang::IEntryPoint> entry_point;
  if (SLANG_FAILED(wrapper->findEntryPointByName("compute_main", entry_point.WriteRef())))
    return absl::InternalError("no compute_main");
  SlangpyLinkOptions link_options(wrapper_name);
  return ComposeAndGenerate(session, {wrapper, user, entry_point.get()}, link_options.data(),
                            link_options.count());
}

constexpr const char* kUserModule = R"(import helper;
public float scale(float x) { return helper_mul(x, 3.0f); }
)";
constexpr const char* kHelperModule =
    R"(public float helper_mul(float a, float b) { return a * b + 1.0f; }
)";
// A module with an entry point of its own, as sgl's load_program links one;
// it imports helper.slang, beside it.
constexpr const char* kProgramModule = R"(import helper;
[shader("compute")]
[numthreads(32, 1, 1)]
void main(uint3 tid: SV_DispatchThreadID, uniform RWStructuredBuffer<float> data) {
  data[tid.x] = helper_mul(data[tid.x], 3.0f);
}
)";
constexpr const char* kWrapperBody = R"(import slangpy;
import user;
[shader("compute")]
[numthreads(32, 1, 1)]
void compute_main(uint3 tid: SV_DispatchThreadID, uniform RWStructuredBuffer<float> data) {
  data[tid.x] = scale(data[tid.x]);
}
)";
constexpr const char* kOtherWrapperBody = R"(import slangpy;
import user;
[shader("compute")]
[numthreads(32, 1, 1)]
void compute_main(uint3 tid: SV_DispatchThreadID, uniform RWStructuredBuffer<float> data) {
  data[tid.x] = scale(data[tid.x]) - scale(float(tid.x));
}
)";

// A fresh directory for a test's source files; removed by the test itself
// before it replays, to prove the replay never needs them.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "spreplay_replayer_test_XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { Remove(); }
  const std::filesystem::path& path() const { return path_; }
  void Write(const std::string& name, const std::string& text) const {
    std::filesystem::create_directories((path_ / name).parent_path());
    std::ofstream(path_ / name, std::ios::binary) << text;
  }
  void Remove() const {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

 private:
  std::filesystem::path path_;
};

inline std::string WheelSlangDirectory() {
  return (std::filesystem::path(kSlangPackageDir) / "slang").string();
}

inline std::unique_ptr<Replayer> NewReplayer(bool reuse_sessions = true) {
  // As `spreplay compile` does: NVRTC is shown the recording's directory.
  EXPECT_TRUE(TakeOverWorkingDirectoryForNvrtc());
  ReplayerOptions options;
  options.nvrtc_directory = NvrtcDirectory();
  options.reuse_sessions = reuse_sessions;
  absl::StatusOr<std::unique_ptr<Replayer>> replayer = Replayer::Create(options);
  EXPECT_TRUE(replayer.ok()) << replayer.status();
  return replayer.ok() ? *std::move(replayer) : nullptr;
}

inline absl::StatusOr<ReplayedKernel> Replay(Replayer& replayer, const Recording& recording) {
  return replayer.Replay(recording.config, recording.program, recording.entry_point_index,
                         recording.target_index, recording.snapshot);
}

// Records every kernel `compile` compiles in one live sgl-like session whose
// include paths are `include_paths`.
inline std::vector<Recording> RecordSession(
    slang::IGlobalSession* global_session, const std::vector<std::string>& include_paths,
    int debug_info, const std::function<absl::Status(slang::ISession*)>& compile) {
  SglCudaSessionDesc desc(global_session, include_paths, debug_info);
  Hooks().Start();
  ComPtr<slang::ISession> session;
  EXPECT_EQ(global_session->createSession(desc.desc(), session.WriteRef()), SLANG_OK);
  const absl::Status status = session ? compile(session.get()) : absl::InternalError("no session");
  std::vector<Recording> recordings = Hooks().Stop();
  EXPECT_TRUE(status.ok()) << status;
  return recordings;
}

// Replays each recording in one replayer: the code must be the recorded code.
inline void ExpectEachReplaysIdentically(const std::vector<Recording>& recordings) {
  std::unique_ptr<Replayer> replayer = NewReplayer();
  ASSERT_TRUE(replayer);
  for (const Recording& recording : recordings) {
    absl::StatusOr<ReplayedKernel> replayed = Replay(*replayer, recording);
    ASSERT_TRUE(replayed.ok()) << replayed.status();
    EXPECT_EQ(replayed->code, recording.code);
  }
}

// Records the kernels of `wrapper_bodies`, each its own call site, compiled in
// one live sgl-like session whose include paths are `include_paths`.
inline std::vector<Recording> RecordCallSites(slang::IGlobalSession* global_session,
                                              const std::vector<std::string>& include_paths,
                                              const std::vector<std::string>& wrapper_bodies,
                                              int debug_info = 0) {
  std::vector<Recording> recordings = RecordSession(
      global_session, include_paths, debug_info, [&](slang::ISession* session) -> absl::Status {
        for (size_t i = 0; i < wrapper_bodies.size(); ++i) {
          absl::StatusOr<std::string> code = CompileCallSite(
              session, "user.slang", fmt::format("call_site_{:040x}", i + 1), wrapper_bodies[i]);
          if (!code.ok()) return code.status();
        }
        return absl::OkStatus();
      });
  EXPECT_EQ(recordings.size(), wrapper_bodies.size());
  return recordings;
}

// The module of the recorded program's composite at `index`.
inline ComponentPtr CompositeChild(const Recording& recording, size_t index) {
  return recording.program->children.at(0)->children.at(index);
}

// ---------------------------------------------------------------------------------------------

class ScopedChdir {
 public:
  explicit ScopedChdir(const std::filesystem::path& directory)
      : previous_(std::filesystem::current_path()) {
    std::filesystem::current_path(directory);
  }
  ~ScopedChdir() { std::filesystem::current_path(previous_); }

 private:
  std::filesystem::path previous_;
};

}  // namespace spreplay
