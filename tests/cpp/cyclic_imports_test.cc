// Modules that import each other in a cycle, against real Slang, no GPU.
// Slang loads such a set from source, but not from IR one module at a time:
// the compile must not go down on them, their kernels must be archived, and
// the app that loads them must run as it does stock.

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/archive_modules.h"
#include "tests/cpp/hooked_slang.h"
#include "tests/cpp/record_and_compile.h"

namespace spreplay {
namespace {

using ::testing::HasSubstr;

// `a` imports `b` and `c`; `b` and `c` import `a`.
constexpr const char* kModuleA = R"(import b;
import c;
public float a_base(float x) { return x * 0.5f; }
public float a_scale(float x) { return b_twice(x) + c_add(x); }
)";
constexpr const char* kModuleB = R"(import a;
public float b_twice(float x) { return x * 2.0f; }
public float b_of_base(float x) { return a_base(x) * 2.0f; }
)";
constexpr const char* kModuleC = R"(import a;
public float c_add(float x) { return x + 1.0f; }
)";
constexpr const char* kWrapper = R"(import slangpy;
import a;
import b;
[shader("compute")]
[numthreads(32, 1, 1)]
void compute_main(uint3 tid: SV_DispatchThreadID, uniform RWStructuredBuffer<float> data) {
  data[tid.x] = a_scale(data[tid.x]) + b_of_base(float(tid.x));
}
)";

std::vector<Recording> RecordCyclicCallSite(const TempDir& sources) {
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  return RecordSession(live.get(), {WheelSlangDirectory(), sources.path().string()}, 0,
                       [](slang::ISession* session) -> absl::Status {
                         return CompileCallSite(session, "a.slang",
                                                fmt::format("call_site_{:040x}", 1), kWrapper)
                             .status();
                       });
}

class CyclicImportsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Switch();
    EXPECT_TRUE(TakeOverWorkingDirectoryForNvrtc());
    sources_.Write("a.slang", kModuleA);
    sources_.Write("b.slang", kModuleB);
    sources_.Write("c.slang", kModuleC);
  }

  TempDir work_;
  TempDir sources_;
};

TEST_F(CyclicImportsTest, TheKernelIsArchivedAndTheCycleIsLeftToTheSourceWithItsReason) {
  absl::StatusOr<Compiled> compiled =
      RecordAndCompile(work_.path(), [&] { return RecordCyclicCallSite(sources_); });
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_EQ(compiled->recordings.size(), 1u);
  EXPECT_EQ(compiled->report.failed(), 0u);
  EXPECT_EQ(compiled->archive->kernel_count(), 1u);
  // slangpy's library is served; the three modules of the cycle and the
  // wrapper that imports them are not, each saying why.
  EXPECT_EQ(compiled->report.modules_archived, 1u);
  EXPECT_EQ(compiled->report.modules_refused, 4u);
  const std::vector<std::string> unserved = UnservedModules(*compiled->archive);
  const auto in_cycle = HasSubstr("import each other (a cycle of imports");
  EXPECT_THAT(unserved, ::testing::IsSupersetOf(
                            {::testing::AllOf(::testing::StartsWith("a.slang: it and '"), in_cycle),
                             ::testing::AllOf(::testing::StartsWith("b: it and '"), in_cycle),
                             ::testing::AllOf(::testing::StartsWith("c: it and '"), in_cycle)}));
  EXPECT_THAT(unserved,
              ::testing::Contains(::testing::AllOf(::testing::StartsWith("call_site_"),
                                                   HasSubstr("whose imports form a cycle"))));
}

TEST_F(CyclicImportsTest, TheAppLoadsTheCycleFromSourceAndGetsItsKernel) {
  absl::StatusOr<Compiled> compiled =
      RecordAndCompile(work_.path(), [&] { return RecordCyclicCallSite(sources_); });
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ArchiveModules modules(*compiled->archive, /*strict=*/false);
  Switch().Use(&modules);
  const HookCounts before = GetHookCounts();
  const std::vector<Recording> served = RecordCyclicCallSite(sources_);
  const HookCounts after = GetHookCounts();
  Switch().Use(nullptr);
  ASSERT_EQ(served.size(), 1u);
  EXPECT_EQ(served[0].program->digest, compiled->recordings[0].program->digest);
  EXPECT_EQ(served[0].code, compiled->recordings[0].code);
  EXPECT_EQ(after.modules_served - before.modules_served, 1u);  // slangpy
  // The two the app asks for by name; Slang loads `b` and `c` for `a`.
  EXPECT_EQ(after.modules_compiled - before.modules_compiled, 2u);
  for (const MissRecord& miss : modules.misses())
    EXPECT_THAT(miss.reason, HasSubstr("did not archive it")) << miss.call_site;
}

}  // namespace
}  // namespace spreplay
