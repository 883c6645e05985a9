// ParallelForInChildren: the work runs in child processes that keep their
// state from one item to the next, a child that dies costs its item only,
// and every child is gone when the call returns.

#include "compiler/parallel_for_in_children.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spreplay {
namespace {

using ::testing::HasSubstr;

struct Replies {
  std::mutex mutex;
  std::map<size_t, absl::StatusOr<std::string>> by_item;
};

void RunAll(size_t count, size_t workers, const std::function<std::string(size_t, size_t)>& child,
            Replies& replies) {
  ParallelForInChildren(count, workers, child,
                        [&](size_t item, size_t worker, const RunInChild& in_child) {
                          absl::StatusOr<std::string> reply = in_child({});
                          std::lock_guard lock(replies.mutex);
                          replies.by_item.emplace(item, std::move(reply));
                        });
}

bool NoChildLeft() { return waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD; }

TEST(ParallelForInChildrenTest, EveryItemRunsOnceInAChildThatKeepsItsStateBetweenItems) {
  const pid_t parent = getpid();
  size_t items_this_process_ran = 0;  // each child's copy counts its own
  Replies replies;
  RunAll(
      40, 3,
      [&](size_t item, size_t worker) {
        ++items_this_process_ran;
        return fmt::format("{} {} {}", item * item, getpid(), items_this_process_ran);
      },
      replies);

  EXPECT_EQ(items_this_process_ran, 0u);
  ASSERT_EQ(replies.by_item.size(), 40u);
  // Per child, the counts it sent: 1, 2, ... n, as one process counting.
  std::map<int, std::vector<size_t>> counts_per_child;
  for (auto& [item, reply] : replies.by_item) {
    ASSERT_TRUE(reply.ok()) << reply.status();
    const std::vector<std::string> fields = absl::StrSplit(*reply, ' ');
    ASSERT_EQ(fields.size(), 3u);
    EXPECT_EQ(fields[0], std::to_string(item * item));
    int pid = 0;
    size_t count = 0;
    ASSERT_TRUE(absl::SimpleAtoi(fields[1], &pid));
    ASSERT_TRUE(absl::SimpleAtoi(fields[2], &count));
    EXPECT_NE(pid, parent);
    counts_per_child[pid].push_back(count);
  }
  EXPECT_LE(counts_per_child.size(), 3u);
  for (auto& [pid, counts] : counts_per_child) {
    std::sort(counts.begin(), counts.end());
    for (size_t i = 0; i < counts.size(); ++i) EXPECT_EQ(counts[i], i + 1) << "child " << pid;
  }
  EXPECT_TRUE(NoChildLeft());
}

TEST(ParallelForInChildrenTest, AChildThatDiesCostsItsItemOnlyAndSaysHow) {
  Replies replies;
  RunAll(
      12, 2,
      [](size_t item, size_t worker) -> std::string {
        if (item == 5) std::raise(SIGSEGV);
        if (item == 8) _exit(3);
        return std::to_string(item);
      },
      replies);

  ASSERT_EQ(replies.by_item.size(), 12u);
  for (auto& [item, reply] : replies.by_item) {
    if (item == 5) {
      ASSERT_FALSE(reply.ok());
      EXPECT_THAT(reply.status().message(),
                  HasSubstr("its worker process was killed by signal 11"));
    } else if (item == 8) {
      ASSERT_FALSE(reply.ok());
      EXPECT_THAT(reply.status().message(), HasSubstr("its worker process exited with status 3"));
    } else {
      ASSERT_TRUE(reply.ok()) << item << ": " << reply.status();
      EXPECT_EQ(*reply, std::to_string(item));
    }
  }
  EXPECT_TRUE(NoChildLeft());
}

TEST(ParallelForInChildrenTest, LargeRepliesArriveWhole) {
  Replies replies;
  RunAll(
      4, 2, [](size_t item, size_t) { return std::string(8 << 20, static_cast<char>('a' + item)); },
      replies);
  ASSERT_EQ(replies.by_item.size(), 4u);
  for (auto& [item, reply] : replies.by_item) {
    ASSERT_TRUE(reply.ok());
    EXPECT_EQ(*reply, std::string(8 << 20, static_cast<char>('a' + item)));
  }
}

TEST(ParallelForInChildrenTest, NoItemsForksNothing) {
  bool ran = false;
  ParallelForInChildren(
      0, 4, [&](size_t, size_t) { return std::string(); },
      [&](size_t, size_t, const RunInChild&) { ran = true; });
  EXPECT_FALSE(ran);
  EXPECT_TRUE(NoChildLeft());
}

}  // namespace
}  // namespace spreplay
