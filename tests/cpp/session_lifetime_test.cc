// The hooks hold every session and component they describe, so that no
// address is ever reused by an object they did not see, until the app lets
// the session go. Then they must release it all: sgl makes a new session at
// every hot reload, and each holds slangpy's library.

#include <string>

#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "interpose/slang_hooks.h"
#include "replayer/com_ptr.h"
#include "slang.h"
#include "tests/cpp/hooked_slang.h"

namespace spreplay {
namespace {

// Resident memory of this process, in MiB.
double ResidentMiB() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

// One session as sgl makes it at a reload: slangpy's library, the app's
// module and one call site's kernel; released when this returns.
void CompileInAFreshSession(slang::IGlobalSession* global_session, const TempDir& sources,
                            int number) {
  SglCudaSessionDesc desc(global_session, {sources.path().string(), WheelSlangDirectory()}, 0);
  ComPtr<slang::ISession> session;
  ASSERT_EQ(global_session->createSession(desc.desc(), session.WriteRef()), SLANG_OK);
  absl::StatusOr<std::string> code = CompileCallSite(
      session.get(), "user.slang", fmt::format("call_site_{:040x}", number), kWrapperBody);
  ASSERT_TRUE(code.ok()) << code.status();
}

class SessionLifetimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sources_.Write("user.slang", kUserModule);
    sources_.Write("helper.slang", kHelperModule);
  }
  ComPtr<slang::IGlobalSession> global_session_ = NewHookedGlobalSession();
  TempDir sources_;
};

TEST_F(SessionLifetimeTest, ASessionTheAppLetsGoIsForgottenWithEverythingMadeInIt) {
  const HeldObjects before = GetHeldObjects();
  {
    SglCudaSessionDesc desc(global_session_.get(),
                            {sources_.path().string(), WheelSlangDirectory()}, 0);
    ComPtr<slang::ISession> session;
    ASSERT_EQ(global_session_->createSession(desc.desc(), session.WriteRef()), SLANG_OK);
    EXPECT_EQ(GetHeldObjects().sessions, before.sessions + 1);
    absl::StatusOr<std::string> code = CompileCallSite(
        session.get(), "user.slang", fmt::format("call_site_{:040x}", 1), kWrapperBody);
    ASSERT_TRUE(code.ok()) << code.status();
    // The user module, the wrapper, its entry point, the composite, the linked program.
    EXPECT_GE(GetHeldObjects().components, before.components + 5);
  }
  EXPECT_EQ(GetHeldObjects().sessions, before.sessions);
  EXPECT_EQ(GetHeldObjects().components, before.components);
}

TEST_F(SessionLifetimeTest, SessionsMadeOneAfterAnotherDoNotAccumulate) {
  // The first sessions pay for what stays: the allocator's pools, Slang's
  // caches in the global session.
  CompileInAFreshSession(global_session_.get(), sources_, 1);
  CompileInAFreshSession(global_session_.get(), sources_, 2);
  const double settled = ResidentMiB();
  CompileInAFreshSession(global_session_.get(), sources_, 3);
  const double one_session = ResidentMiB() - settled;
  for (int number = 4; number <= 8; ++number)
    CompileInAFreshSession(global_session_.get(), sources_, number);
  const double grown = ResidentMiB() - settled;
  // Held sessions, each with slangpy's library, grow by well over 100 MiB
  // apiece; released ones reuse the memory of those before them.
  EXPECT_LT(grown, 100.0) << fmt::format("{:.0f} MiB after 6 more sessions ({:.0f} MiB after one)",
                                         grown, one_session);
}

}  // namespace
}  // namespace spreplay
