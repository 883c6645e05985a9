// RunCompilePool: every task runs once; a rebuild starts once its own part
// is serialized, not once every part is; Slang tasks run in the children of
// the Slang workers only, thread tasks anywhere; and a child that dies costs
// its own task only. A worker keeps to the part its child holds, and moves
// to another only where that part's holders have more left to do than the
// move costs.

#include "compiler/compile_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
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

// What the parent saw, in the order it saw it.
struct Log {
  std::mutex mutex;
  std::vector<std::string> events;
  std::map<size_t, absl::StatusOr<std::string>> serialized;  // by serialization
  std::map<size_t, absl::StatusOr<std::string>> rebuilt;     // by rebuild
  std::set<size_t> slang_workers_seen;
  std::map<size_t, size_t> thread_tasks;  // task -> worker

  void Add(std::string event) {
    std::lock_guard lock(mutex);
    events.push_back(std::move(event));
  }
  size_t IndexOf(const std::string& event) {
    std::lock_guard lock(mutex);
    return std::find(events.begin(), events.end(), event) - events.begin();
  }
};

void Sleep(int milliseconds) {
  std::this_thread::sleep_for(std::chrono::milliseconds(milliseconds));
}

// Serialization s makes part s; `rebuild_parts` the rebuilds' parts. The
// child sleeps `serialize_ms[s]` to serialize, and replies with its pid and
// what it was sent.
CompilePoolWork PoolOf(Log& log, std::vector<int> serialize_ms, std::vector<size_t> rebuild_parts,
                       size_t workers, size_t slang_workers) {
  CompilePoolWork work;
  work.workers = workers;
  work.slang_workers = slang_workers;
  for (size_t s = 0; s < serialize_ms.size(); ++s) work.serialization_parts.push_back(s);
  work.rebuild_parts = rebuild_parts;
  const size_t serializations = serialize_ms.size();
  work.child = [serialize_ms, serializations](size_t task, size_t, std::string_view payload) {
    if (task < serializations) {
      Sleep(serialize_ms[task]);
      return fmt::format("part {} from {}", task, getpid());
    }
    Sleep(5);
    return fmt::format("rebuild {} from {} sent '{}'", task - serializations, getpid(), payload);
  };
  work.serialize = [&log](size_t s, size_t worker, const RunInChild& in_child) {
    absl::StatusOr<std::string> reply = in_child("");
    log.Add(fmt::format("made {}", s));
    std::lock_guard lock(log.mutex);
    log.serialized.emplace(s, std::move(reply));
    log.slang_workers_seen.insert(worker);
  };
  work.rebuild = [&log, rebuild_parts](size_t r, size_t worker, const RunInChild& in_child) {
    log.Add(fmt::format("rebuild {} of part {} starts", r, rebuild_parts[r]));
    absl::StatusOr<std::string> reply = in_child(fmt::format("IR of part {}", rebuild_parts[r]));
    log.Add(fmt::format("rebuild {} done", r));
    std::lock_guard lock(log.mutex);
    log.rebuilt.emplace(r, std::move(reply));
    log.slang_workers_seen.insert(worker);
  };
  return work;
}

// `count` thread tasks of `milliseconds` each, logged with their worker.
void AddThreadTasks(CompilePoolWork& work, Log& log, size_t count, int milliseconds) {
  work.thread_tasks = count;
  work.run_in_thread = [&log, milliseconds](size_t task, size_t worker) {
    Sleep(milliseconds);
    std::lock_guard lock(log.mutex);
    log.thread_tasks.emplace(task, worker);
  };
}

TEST(CompilePoolTest, EveryTaskRunsOnceInAChildAndEachRebuildAfterItsPart) {
  Log log;
  const std::vector<size_t> rebuild_parts = {0, 1, 2, 0, 1, 2, 2, 2, 0, 1};
  CompilePoolWork work = PoolOf(log, {30, 60, 90}, rebuild_parts, 3, 3);
  AddThreadTasks(work, log, 20, 2);
  RunCompilePool(work);

  ASSERT_EQ(log.serialized.size(), 3u);
  ASSERT_EQ(log.rebuilt.size(), rebuild_parts.size());
  EXPECT_EQ(log.thread_tasks.size(), 20u);
  for (auto& [s, reply] : log.serialized) {
    ASSERT_TRUE(reply.ok()) << reply.status();
    const std::string this_process = fmt::format("part {} from {}", s, getpid());
    EXPECT_THAT(*reply, HasSubstr(fmt::format("part {} from ", s)));
    EXPECT_NE(*reply, this_process);
  }
  for (size_t r = 0; r < rebuild_parts.size(); ++r) {
    ASSERT_TRUE(log.rebuilt[r].ok()) << log.rebuilt[r].status();
    EXPECT_THAT(*log.rebuilt[r], HasSubstr(fmt::format("sent 'IR of part {}'", rebuild_parts[r])));
    EXPECT_GT(log.IndexOf(fmt::format("rebuild {} of part {} starts", r, rebuild_parts[r])),
              log.IndexOf(fmt::format("made {}", rebuild_parts[r])));
  }
}

TEST(CompilePoolTest, APartsRebuildsNeedNotWaitForASlowerPart) {
  Log log;
  // Part 1 takes far longer to serialize than part 0 and all its rebuilds.
  CompilePoolWork work = PoolOf(log, {10, 1500}, {0, 0, 0, 1}, 2, 2);
  RunCompilePool(work);
  const size_t part_1_made = log.IndexOf("made 1");
  for (size_t r = 0; r < 3; ++r)
    EXPECT_LT(log.IndexOf(fmt::format("rebuild {} done", r)), part_1_made);
  EXPECT_GT(log.IndexOf("rebuild 3 of part 1 starts"), part_1_made);
}

// One worker serializes part 0, then part 1, which its child then holds:
// it rebuilds part 1's programs before part 0's, whatever their order.
TEST(CompilePoolTest, AWorkerRebuildsThePartItsChildHoldsFirst) {
  Log log;
  CompilePoolWork work = PoolOf(log, {5, 5}, {0, 1, 0, 1}, 1, 1);
  RunCompilePool(work);
  std::vector<std::string> rebuilds;
  for (const std::string& event : log.events)
    if (event.ends_with("starts")) rebuilds.push_back(event);
  EXPECT_THAT(rebuilds,
              ::testing::ElementsAre("rebuild 1 of part 1 starts", "rebuild 3 of part 1 starts",
                                     "rebuild 0 of part 0 starts", "rebuild 2 of part 0 starts"));
}

// The pid that replied "... from PID ...".
std::string PidOf(const absl::StatusOr<std::string>& reply) {
  if (!reply.ok()) return "";
  const size_t from = reply->find(" from ");
  return reply->substr(from + 6, reply->find(' ', from + 6) - from - 6);
}

// Which processes rebuilt part 0's programs, among rebuilds 0..count-1.
std::set<std::string> ChildrenThatRebuilt(Log& log, size_t count) {
  std::set<std::string> pids;
  for (size_t r = 0; r < count; ++r) pids.insert(PidOf(log.rebuilt[r]));
  return pids;
}

// Three workers, two parts: part 0 is made at once, part 1 much later.
// One worker serializes nothing; whether it moves to part 0 depends on what
// part 0's holder has left to do. Which worker holds part 0 is the
// threads' to decide: one that comes late finds both serializations taken,
// and one that finishes part 0 before another worker starts serializes
// part 1 too, leaving part 0 to whoever rebuilds its first program.
CompilePoolWork IdleWorkerBesidePart0(Log& log, size_t rebuilds_of_part_0, double seconds_each) {
  std::vector<size_t> rebuild_parts(rebuilds_of_part_0, 0);
  rebuild_parts.push_back(1);
  CompilePoolWork work = PoolOf(log, {5, 400}, rebuild_parts, 3, 3);
  work.rebuild_seconds.assign(work.rebuild_parts.size(), seconds_each);
  return work;
}

TEST(CompilePoolTest, AnIdleWorkerLeavesShortRebuildsToThePartsHolder) {
  Log log;
  RunCompilePool(IdleWorkerBesidePart0(log, 6, 0.01));
  ASSERT_EQ(log.rebuilt.size(), 7u);
  // Six rebuilds of at least 0.05 s each: less, all together, than the
  // idle worker's move and one of them. So the child that holds part 0
  // rebuilds them all.
  EXPECT_EQ(ChildrenThatRebuilt(log, 6).size(), 1u);
}

TEST(CompilePoolTest, AnIdleWorkerTakesLongRebuildsOfAPartItDoesNotHold) {
  Log log;
  RunCompilePool(IdleWorkerBesidePart0(log, 8, 2.0));
  ASSERT_EQ(log.rebuilt.size(), 9u);
  // Eight rebuilds of 2 s ahead of one holder: the idle worker shares them.
  EXPECT_GT(ChildrenThatRebuilt(log, 8).size(), 1u);
}

TEST(CompilePoolTest, OnlySlangWorkersRunSlangTasksAndEveryWorkerRunsThreadTasks) {
  Log log;
  CompilePoolWork work = PoolOf(log, {200}, {0, 0}, 3, 1);
  AddThreadTasks(work, log, 30, 10);
  RunCompilePool(work);
  EXPECT_EQ(log.slang_workers_seen, std::set<size_t>{0});
  std::set<size_t> thread_workers;
  for (auto& [task, worker] : log.thread_tasks) thread_workers.insert(worker);
  EXPECT_EQ(log.thread_tasks.size(), 30u);
  EXPECT_TRUE(thread_workers.contains(1) && thread_workers.contains(2));
}

TEST(CompilePoolTest, AChildThatDiesCostsItsTaskOnly) {
  Log log;
  CompilePoolWork work = PoolOf(log, {10, 10}, {0, 1, 1}, 1, 1);
  const ChildWork serve = work.child;
  work.child = [serve](size_t task, size_t worker, std::string_view payload) {
    if (task == 0) raise(SIGKILL);
    return serve(task, worker, payload);
  };
  RunCompilePool(work);
  ASSERT_EQ(log.serialized.size(), 2u);
  EXPECT_THAT(log.serialized[0].status().message(), HasSubstr("killed by signal 9"));
  ASSERT_TRUE(log.serialized[1].ok()) << log.serialized[1].status();
  ASSERT_EQ(log.rebuilt.size(), 3u);
  for (auto& [r, reply] : log.rebuilt) EXPECT_TRUE(reply.ok()) << reply.status();
}

TEST(CompilePoolTest, WithoutSlangWorkTheThreadTasksStillRun) {
  CompilePoolWork work;
  work.workers = 2;
  std::atomic<size_t> ran{0};
  work.thread_tasks = 5;
  work.run_in_thread = [&](size_t, size_t) { ++ran; };
  RunCompilePool(work);
  EXPECT_EQ(ran, 5u);
}

// Whether the read end of a pipe whose write end this process held for
// `milliseconds`, then closed, reads its end within a second: it does not
// while a copy of the write end is open in another process.
bool PipeEndsOnClose(int milliseconds) {
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) return false;
  Sleep(milliseconds);
  close(ends[1]);
  pollfd readable = {ends[0], POLLIN, 0};
  char byte;
  const bool ended = poll(&readable, 1, 1000) == 1 && read(ends[0], &byte, 1) == 0;
  close(ends[0]);
  return ended;
}

// A child that dies is forked again while other workers hold pipes to
// programs they run (ptxas, fatbinary): the new child must not keep a copy
// of one open, or its reader would wait for its end as long as the child
// lives.
TEST(CompilePoolTest, AChildForkedAgainWhileThreadsHoldPipesLeavesThemAlone) {
  Log log;
  CompilePoolWork work = PoolOf(log, {10}, {0, 0, 0, 0, 0, 0}, 3, 1);
  const ChildWork serve = work.child;
  work.child = [serve](size_t task, size_t worker, std::string_view payload) {
    Sleep(20);
    if (task == 0 || task == 2) raise(SIGKILL);  // the serialization, and rebuild 1
    return serve(task, worker, payload);
  };
  std::atomic<size_t> ended{0};
  work.thread_tasks = 60;
  work.run_in_thread = [&](size_t, size_t) {
    if (PipeEndsOnClose(5)) ++ended;
  };
  RunCompilePool(work);
  EXPECT_EQ(ended, 60u);
  ASSERT_EQ(log.rebuilt.size(), 6u);
  size_t died = 0;
  for (auto& [r, reply] : log.rebuilt) {
    if (!reply.ok()) {
      ++died;
      EXPECT_THAT(reply.status().message(), HasSubstr("killed by signal 9"));
    }
  }
  EXPECT_EQ(died, 1u);
}

}  // namespace
}  // namespace spreplay
