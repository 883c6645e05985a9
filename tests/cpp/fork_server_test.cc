// ForkServer: the server prepares its state once; each request runs in a
// process forked from it, which starts from that state and spends its own
// copy; requests from several threads run at once; a request whose process
// dies costs that request only; a server that could not prepare says why,
// as Unavailable, so that the caller runs the work elsewhere.

#include "compiler/fork_server.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spreplay {
namespace {

using ::testing::HasSubstr;

// The server's state: what `prepare` made, which each request spends.
struct Counter {
  int prepared = 0;
  int spent = 0;
};

TEST(ForkServerTest, EachRequestStartsFromThePreparedStateInAProcessOfItsOwn) {
  Counter counter;
  std::unique_ptr<ForkServer> server = ForkServer::Start(
      [&] {
        ++counter.prepared;
        return absl::OkStatus();
      },
      [&](size_t item) {
        ++counter.spent;
        return fmt::format("{} {} {} {}", item, counter.prepared, counter.spent, getpid());
      });
  ASSERT_NE(server, nullptr);
  std::set<std::string> pids;
  for (size_t item = 0; item < 3; ++item) {
    absl::StatusOr<std::string> reply = server->Run(item);
    ASSERT_TRUE(reply.ok()) << reply.status();
    // Prepared once, and no request sees what another spent.
    EXPECT_THAT(*reply, ::testing::StartsWith(fmt::format("{} 1 1 ", item)));
    pids.insert(reply->substr(reply->rfind(' ') + 1));
  }
  EXPECT_EQ(pids.size(), 3u);
  EXPECT_FALSE(pids.contains(std::to_string(getpid())));
  EXPECT_EQ(counter.prepared, 0);  // this process prepared nothing
}

TEST(ForkServerTest, RequestsFromSeveralThreadsRunAtOnce) {
  std::unique_ptr<ForkServer> server =
      ForkServer::Start([] { return absl::OkStatus(); },
                        [](size_t item) {
                          std::this_thread::sleep_for(std::chrono::milliseconds(300));
                          return std::to_string(item);
                        });
  ASSERT_NE(server, nullptr);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  std::vector<absl::StatusOr<std::string>> replies(8, absl::UnknownError("not run"));
  for (size_t item = 0; item < replies.size(); ++item)
    threads.emplace_back([&, item] { replies[item] = server->Run(item); });
  for (std::thread& thread : threads) thread.join();
  for (size_t item = 0; item < replies.size(); ++item) {
    ASSERT_TRUE(replies[item].ok()) << replies[item].status();
    EXPECT_EQ(*replies[item], std::to_string(item));
  }
  // Eight requests of 300 ms each, one after another, would take 2.4 s.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));
}

TEST(ForkServerTest, ARequestWhoseProcessDiesCostsThatRequestOnly) {
  std::unique_ptr<ForkServer> server = ForkServer::Start([] { return absl::OkStatus(); },
                                                         [](size_t item) -> std::string {
                                                           if (item == 1) abort();
                                                           return "fine";
                                                         });
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(server->Run(0).ok());
  absl::StatusOr<std::string> died = server->Run(1);
  EXPECT_TRUE(absl::IsInternal(died.status())) << died.status();
  EXPECT_THAT(died.status().message(), HasSubstr("died"));
  absl::StatusOr<std::string> after = server->Run(2);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, "fine");
}

TEST(ForkServerTest, AServerThatCouldNotPrepareSaysWhyAsUnavailable) {
  std::unique_ptr<ForkServer> server = ForkServer::Start(
      [] { return absl::NotFoundError("its programs share no module to load first"); },
      [](size_t) { return std::string("never"); });
  ASSERT_NE(server, nullptr);
  absl::StatusOr<std::string> reply = server->Run(0);
  EXPECT_TRUE(absl::IsUnavailable(reply.status())) << reply.status();
  EXPECT_THAT(reply.status().message(), HasSubstr("share no module"));
  EXPECT_TRUE(absl::IsUnavailable(server->Run(1).status()));
}

TEST(ForkServerTest, AServerThatDiesPreparingIsUnavailable) {
  std::unique_ptr<ForkServer> server = ForkServer::Start(
      []() -> absl::Status { abort(); }, [](size_t) { return std::string("never"); });
  ASSERT_NE(server, nullptr);
  absl::StatusOr<std::string> reply = server->Run(0);
  EXPECT_TRUE(absl::IsUnavailable(reply.status())) << reply.status();
  EXPECT_THAT(reply.status().message(), HasSubstr("server process"));
}

}  // namespace
}  // namespace spreplay
