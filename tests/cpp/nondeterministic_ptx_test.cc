// Slang does not always emit the same PTX for one program: a real app's
// kernel came back with its registers numbered differently from one run to
// the next. Here the recording itself holds such a PTX (the app's run gave
// %f1 and %f2 each other's names), against real Slang, no GPU: the compile
// accepts it in every one of ten compiles and archives the recorded PTX;
// a recording that differs in an operand is refused, every time.

#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "archive/archive.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cpp/hooked_slang.h"
#include "tests/cpp/record_and_compile.h"

namespace spreplay {
namespace {

using ::testing::HasSubstr;

// Passes every event to `target`, but the recorded code as `rewrite` makes it.
class RewritingRecorder final : public HookListener {
 public:
  RewritingRecorder(HookListener* target, std::function<std::string(std::string)> rewrite)
      : target_(target), rewrite_(std::move(rewrite)) {}

  void OnToolchainKnown(const std::string& toolchain, const std::string& tag) override {
    target_->OnToolchainKnown(toolchain, tag);
  }
  void OnSessionCreated(const SessionInfo& session) override { target_->OnSessionCreated(session); }
  void OnModuleLoaded(const ComponentPtr& module, const std::vector<FileContent>& files) override {
    target_->OnModuleLoaded(module, files);
  }
  void OnModuleRequested(const SessionInfo& session, const std::string& toolchain,
                         const ComponentPtr& module, double load_seconds) override {
    target_->OnModuleRequested(session, toolchain, module, load_seconds);
  }
  void OnKernelCompiled(const KernelRequest& request, const void* code, size_t size,
                        double seconds) override {
    rewritten_ = rewrite_(std::string(static_cast<const char*>(code), size));
    target_->OnKernelCompiled(request, rewritten_.data(), rewritten_.size(), seconds);
  }

  const std::string& rewritten() const { return rewritten_; }

 private:
  HookListener* target_;
  std::function<std::string(std::string)> rewrite_;
  std::string rewritten_;
};

// `ptx` with registers `a` and `b` trading names everywhere (%f1 is not %f10).
std::string SwapRegisters(const std::string& ptx, const std::string& a, const std::string& b) {
  const std::string placeholder = "%spreplay_swap";
  auto whole = [](const std::string& name) { return std::regex(name + "(?![0-9])"); };
  std::string swapped = std::regex_replace(ptx, whole(a), placeholder);
  swapped = std::regex_replace(swapped, whole(b), a);
  return std::regex_replace(swapped, whole(placeholder), b);
}

class NondeterministicPtxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Switch();
    EXPECT_TRUE(TakeOverWorkingDirectoryForNvrtc());
    sources_.Write("user.slang", kUserModule);
    sources_.Write("helper.slang", kHelperModule);
  }

  // Records the call site with its code rewritten; returns the recorded code.
  std::string Record(const std::function<std::string(std::string)>& rewrite) {
    absl::StatusOr<std::unique_ptr<TraceRecorder>> recorder =
        TraceRecorder::Open(trace_path(), R"({"pid": 1})");
    EXPECT_TRUE(recorder.ok()) << recorder.status();
    RewritingRecorder rewriting(recorder->get(), rewrite);
    Switch().Use(&rewriting);
    ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
    RecordCallSites(live.get(), {WheelSlangDirectory(), sources_.path().string()}, {kWrapperBody});
    Switch().Use(nullptr);
    return rewriting.rewritten();
  }

  absl::StatusOr<CompileReport> Compile(int round) {
    absl::StatusOr<Trace> trace = Trace::Read(trace_path());
    if (!trace.ok()) return trace.status();
    CompileOptions options;
    options.arches = {90};
    options.jobs = 1;
    options.modules = false;
    return CompileTrace(*trace, (work_.path() / fmt::format("kernels{}.sprk", round)).string(),
                        options);
  }

  std::string trace_path() const { return (work_.path() / "trace.capnp").string(); }

  TempDir work_;
  TempDir sources_;
};

TEST_F(NondeterministicPtxTest, RenamedRegistersCompileInTenOfTenCompilesFromTheRecordedPtx) {
  const std::string recorded = Record([](std::string ptx) {
    EXPECT_THAT(ptx, HasSubstr("%f1")) << "the kernel has no %f registers to rename";
    return SwapRegisters(ptx, "%f1", "%f2");
  });
  for (int round = 0; round < 10; ++round) {
    absl::StatusOr<CompileReport> report = Compile(round);
    ASSERT_TRUE(report.ok()) << report.status();
    ASSERT_EQ(report->kernels.size(), 1u);
    const KernelOutcome& kernel = report->kernels[0];
    EXPECT_EQ(kernel.status, KernelOutcome::Status::kCompiled)
        << "round " << round << ": " << kernel.message;
    EXPECT_EQ(kernel.ptx_renamed_registers, 2u) << "round " << round;
  }
  // The archive serves what the app compiled, not the replay's numbering: the
  // kernel's fatbin holds the recorded PTX, whose first use of %f2 the
  // replay spells %f1.
  absl::StatusOr<Archive> archive = Archive::Open((work_.path() / "kernels9.sprk").string());
  ASSERT_TRUE(archive.ok()) << archive.status();
  const std::string recorded_text(recorded.c_str());
  const size_t line_start = recorded_text.rfind('\n', recorded_text.find("%f2")) + 1;
  const std::string line =
      recorded_text.substr(line_start, recorded_text.find('\n', line_start) - line_start);
  const std::span<const std::byte> bytes = archive->bytes();
  const std::string_view archived(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  EXPECT_NE(archived.find(line), std::string_view::npos) << "not in the archive: " << line;
  EXPECT_EQ(archived.find(SwapRegisters(line, "%f1", "%f2")), std::string_view::npos);
}

TEST_F(NondeterministicPtxTest, AChangedOperandIsRefusedEveryTime) {
  Record([](std::string ptx) {
    // helper_mul(x, 3.0f): the constant 3.0f becomes 4.0f.
    const size_t at = ptx.find("0f40400000");
    EXPECT_NE(at, std::string::npos) << "the kernel has no 3.0f operand";
    if (at != std::string::npos) ptx.replace(at, 10, "0f40800000");
    return ptx;
  });
  for (int round = 0; round < 3; ++round) {
    absl::StatusOr<CompileReport> report = Compile(round);
    ASSERT_TRUE(report.ok()) << report.status();
    ASSERT_EQ(report->kernels.size(), 1u);
    EXPECT_EQ(report->kernels[0].status, KernelOutcome::Status::kFailed);
    EXPECT_THAT(report->kernels[0].message, HasSubstr("differs from the recorded PTX"));
  }
}

}  // namespace
}  // namespace spreplay
