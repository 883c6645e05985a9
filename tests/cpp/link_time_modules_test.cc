// Link-time modules made from source strings, against real Slang, no GPU:
// sgl's `load_program(..., additional_source=...)` loads the extra source as
// a module named `additional_source_<n>`, numbered per process, so processes
// of one app record different texts under one name in one session
// configuration. Each must be verified and archived with its own text, and
// served to the process that loads it.

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/archive_modules.h"
#include "tests/cpp/hooked_slang.h"
#include "tests/cpp/record_and_compile.h"

namespace spreplay {
namespace {

constexpr const char* kLinkedModule = R"(extern static const float VALUE;
RWStructuredBuffer<float> result;
[shader("compute")]
[numthreads(16, 1, 1)]
void compute_main(uint3 tid: SV_DispatchThreadID) {
  result[tid.x] = tid.x * VALUE;
}
)";

std::string Constants(int value) {
  return fmt::format("export static const float VALUE = {};\n", value);
}

// One process of the app: a session of its own, whose first load_program
// names its extra source additional_source_0.
std::vector<Recording> RecordLoadProgram(const TempDir& sources, int value) {
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  return RecordSession(
      live.get(), {WheelSlangDirectory(), sources.path().string()}, 0,
      [&](slang::ISession* session) -> absl::Status {
        ComPtr<ISlangBlob> diagnostics;
        slang::IModule* linked = session->loadModule("linked.slang", diagnostics.WriteRef());
        if (!linked) return absl::InternalError("linked: " + Diagnostics(diagnostics));
        const std::string constants = Constants(value);
        slang::IModule* extra = session->loadModuleFromSourceString(
            "additional_source_0", nullptr, constants.c_str(), diagnostics.WriteRef());
        if (!extra) return absl::InternalError("extra: " + Diagnostics(diagnostics));
        ComPtr<slang::IEntryPoint> entry_point;
        if (SLANG_FAILED(linked->findEntryPointByName("compute_main", entry_point.WriteRef())))
          return absl::InternalError("no compute_main");
        return ComposeAndGenerate(session, {linked, extra, entry_point.get()}).status();
      });
}

TEST(LinkTimeModulesTest, OneNameWithATextPerProcessIsArchivedAndServedPerText) {
  Switch();
  EXPECT_TRUE(TakeOverWorkingDirectoryForNvrtc());
  TempDir work, sources;
  sources.Write("linked.slang", kLinkedModule);
  absl::StatusOr<Compiled> compiled = RecordAndCompile(work.path(), [&] {
    std::vector<Recording> both = RecordLoadProgram(sources, 2);
    for (Recording& recording : RecordLoadProgram(sources, 5)) both.push_back(std::move(recording));
    return both;
  });
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_EQ(compiled->recordings.size(), 2u);
  ASSERT_NE(compiled->recordings[0].code, compiled->recordings[1].code);
  EXPECT_EQ(compiled->report.failed(), 0u);
  EXPECT_EQ(compiled->report.modules_refused, 0u);
  // linked.slang once, additional_source_0 once per text.
  EXPECT_EQ(compiled->report.modules_archived, 3u);

  for (int value : {5, 2}) {
    ArchiveModules modules(*compiled->archive, /*strict=*/true);
    Switch().Use(&modules);
    const HookCounts before = GetHookCounts();
    const std::vector<Recording> served = RecordLoadProgram(sources, value);
    const HookCounts after = GetHookCounts();
    Switch().Use(nullptr);
    ASSERT_EQ(served.size(), 1u) << value;
    EXPECT_EQ(served[0].code, compiled->recordings[value == 2 ? 0 : 1].code) << value;
    EXPECT_EQ(after.modules_served - before.modules_served, 2u) << value;
    EXPECT_EQ(after.modules_compiled - before.modules_compiled, 0u) << value;
    EXPECT_THAT(modules.misses(), ::testing::IsEmpty()) << value;
  }
}

}  // namespace
}  // namespace spreplay
