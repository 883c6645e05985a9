// The hooks' shared state under threads, against real Slang, no GPU: call
// sites compiled on several threads at once while listeners are added, as
// `spreplay.install_hooks()` may do after sessions exist. Meant to run under
// ThreadSanitizer too (tests/cpp/run-tsan), where any unguarded access to the
// hook state is reported.

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cpp/hooked_slang.h"

namespace spreplay {
namespace {

class CountingListener final : public HookListener {
 public:
  void OnKernelCompiled(const KernelRequest&, const void*, size_t, double) override {
    kernels_.fetch_add(1, std::memory_order_relaxed);
  }
  int kernels() const { return kernels_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int> kernels_ = 0;
};

constexpr int kThreads = 4;
constexpr int kListenersAddedMeanwhile = 64;

TEST(HookConcurrencyTest, ThreadsCompileWhileListenersAreAdded) {
  Hooks();
  EXPECT_TRUE(TakeOverWorkingDirectoryForNvrtc());
  TempDir sources;
  sources.Write("user.slang", kUserModule);
  sources.Write("helper.slang", kHelperModule);
  // Added before any thread starts: it must see every kernel. The hooks keep
  // their listeners for the life of the process, so these are never freed.
  auto* before = new CountingListener;
  AddHookListener(before);
  // A session that has loaded NVRTC, alive until the end: the threads'
  // sessions then never load or unload it while another thread uses it,
  // which only the dynamic loader's lock orders (one ThreadSanitizer cannot
  // see, in code that is not spreplay's).
  ComPtr<slang::IGlobalSession> keeper = NewHookedGlobalSession();
  {
    SglCudaSessionDesc desc(keeper.get(), {WheelSlangDirectory(), sources.path().string()}, 0);
    ComPtr<slang::ISession> session;
    ASSERT_EQ(keeper->createSession(desc.desc(), session.WriteRef()), SLANG_OK);
    ASSERT_TRUE(CompileCallSite(session.get(), "user.slang", fmt::format("call_site_{:040x}", 99),
                                kWrapperBody)
                    .ok());
  }

  std::atomic<int> compiled = 0;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  std::vector<ComPtr<slang::IGlobalSession>> global_sessions(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // A global session per thread, as a device per thread has: Slang's
      // sessions are not for sharing between threads. Released after the
      // join, like the keeper.
      global_sessions[t] = NewHookedGlobalSession();
      slang::IGlobalSession* live = global_sessions[t].get();
      SglCudaSessionDesc desc(live, {WheelSlangDirectory(), sources.path().string()}, 0);
      ComPtr<slang::ISession> session;
      if (live->createSession(desc.desc(), session.WriteRef()) != SLANG_OK) {
        failures[t] = "no session";
        return;
      }
      absl::StatusOr<std::string> code = CompileCallSite(
          session.get(), "user.slang", fmt::format("call_site_{:040x}", 100 + t), kWrapperBody);
      if (code.ok()) {
        compiled.fetch_add(1);
      } else {
        failures[t] = std::string(code.status().message());
      }
    });
  }
  std::vector<CountingListener*> meanwhile;
  for (int i = 0; i < kListenersAddedMeanwhile; ++i) {
    meanwhile.push_back(new CountingListener);
    AddHookListener(meanwhile.back());
    std::this_thread::yield();
  }
  for (std::thread& thread : threads) thread.join();

  EXPECT_THAT(failures, ::testing::Each(""));
  EXPECT_EQ(compiled.load(), kThreads);
  EXPECT_EQ(before->kernels(), kThreads + 1);  // the keeper's too
  for (const CountingListener* listener : meanwhile) EXPECT_LE(listener->kernels(), kThreads);
}

}  // namespace
}  // namespace spreplay
