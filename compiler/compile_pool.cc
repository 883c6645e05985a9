#include "compiler/compile_pool.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

namespace spreplay {
namespace {

struct Task {
  enum class Kind { kSerialize, kRebuild, kThread } kind;
  size_t index;
};

// What moving a worker's child to another part costs besides the rebuild:
// the part's IR sent, decoded and loaded into a new session, and the first
// codegen of a process, about 0.2-0.4 s with slangpy's library loaded
// (make demo's traces on a 2-core machine).
constexpr double kSecondsToMoveToAPart = 0.3;
// What a rebuild with no recorded compile (a module's program) is expected
// to take at least.
constexpr double kLeastRebuildSeconds = 0.05;

// Which task each worker takes next, and what a rebuild waits for.
class Schedule {
 public:
  Schedule(const CompilePoolWork& work, size_t slang_workers)
      : work_(work),
        slang_workers_(slang_workers),
        rebuild_taken_(work.rebuild_parts.size(), false),
        held_(slang_workers) {
    size_t parts = 0;
    for (size_t part : work.serialization_parts) parts = std::max(parts, part + 1);
    for (size_t part : work.rebuild_parts) parts = std::max(parts, part + 1);
    part_made_.assign(parts, false);
    holders_.assign(parts, 0);
    seconds_left_.assign(parts, 0);
    for (size_t r = 0; r < work.rebuild_parts.size(); ++r)
      seconds_left_[work.rebuild_parts[r]] += ExpectedSeconds(r);
  }

  // The worker's next task, waiting while all it could take is a rebuild
  // whose part is still being serialized; nullopt once nothing is left for
  // it. A rebuild it declines to move for is left to its part's holders,
  // which take their part's rebuilds before any other task.
  std::optional<Task> Next(size_t worker) {
    std::unique_lock lock(mutex_);
    for (;;) {
      const bool slang = worker < slang_workers_;
      if (slang && next_serialization_ < work_.serialization_parts.size()) {
        ++serializing_;
        Hold(worker, work_.serialization_parts[next_serialization_]);
        return Task{Task::Kind::kSerialize, next_serialization_++};
      }
      if (slang) {
        if (std::optional<size_t> rebuild = ReadyRebuild(held_[worker])) {
          const size_t part = work_.rebuild_parts[*rebuild];
          rebuild_taken_[*rebuild] = true;
          seconds_left_[part] -= ExpectedSeconds(*rebuild);
          Hold(worker, part);
          return Task{Task::Kind::kRebuild, *rebuild};
        }
      }
      if (next_thread_task_ < work_.thread_tasks)
        return Task{Task::Kind::kThread, next_thread_task_++};
      if (!slang || first_untaken_rebuild_ == rebuild_taken_.size() || serializing_ == 0)
        return std::nullopt;
      // wait_for, not wait: libstdc++ 12's wait() needs a newer C++ runtime
      // than the wheel's manylinux tag promises; wait_for is all header.
      made_.wait_for(lock, std::chrono::seconds(1));
    }
  }

  void Made(size_t serialization) {
    {
      std::lock_guard lock(mutex_);
      part_made_[work_.serialization_parts[serialization]] = true;
      --serializing_;
    }
    made_.notify_all();
  }

 private:
  double ExpectedSeconds(size_t rebuild) const {
    if (work_.rebuild_seconds.empty()) return 0;
    return std::max(work_.rebuild_seconds[rebuild], kLeastRebuildSeconds);
  }

  void Hold(size_t worker, size_t part) {
    if (held_[worker]) --holders_[*held_[worker]];
    held_[worker] = part;
    ++holders_[part];
  }

  // Whether a worker whose child holds another part finishes `rebuild`
  // sooner than the part's holders would reach it: they have the part's
  // untaken rebuilds ahead of them, it has the move and the rebuild.
  bool WorthMoving(size_t rebuild) const {
    const size_t part = work_.rebuild_parts[rebuild];
    if (work_.rebuild_seconds.empty() || holders_[part] == 0) return true;
    return seconds_left_[part] / static_cast<double>(holders_[part]) >
           kSecondsToMoveToAPart + ExpectedSeconds(rebuild);
  }

  // The first rebuild not taken of the part `held` (the one the worker's
  // child holds), else the first of any part that is made (every part is,
  // once no serialization is left running) and worth moving to. A child
  // that moves to another part is sent that part's IR and loads it in a new
  // session, which costs about as much as a short program's rebuild; so a
  // worker keeps to its part until none of its rebuilds is left, and moves
  // to a part only where that part's holders are behind (WorthMoving).
  std::optional<size_t> ReadyRebuild(std::optional<size_t> held) {
    while (first_untaken_rebuild_ < rebuild_taken_.size() && rebuild_taken_[first_untaken_rebuild_])
      ++first_untaken_rebuild_;
    const bool all_made =
        next_serialization_ == work_.serialization_parts.size() && serializing_ == 0;
    std::optional<size_t> first;
    // Each part's first untaken rebuild, its longest, stands for the part.
    std::vector<bool> weighed(part_made_.size(), false);
    for (size_t r = first_untaken_rebuild_; r < rebuild_taken_.size(); ++r) {
      if (rebuild_taken_[r]) continue;
      const size_t part = work_.rebuild_parts[r];
      if (held == part) return r;
      if (first || weighed[part]) continue;
      weighed[part] = true;
      if ((all_made || part_made_[part]) && WorthMoving(r)) {
        first = r;
        if (!held) break;
      }
    }
    return first;
  }

  const CompilePoolWork& work_;
  const size_t slang_workers_;
  std::mutex mutex_;
  std::condition_variable made_;
  size_t next_serialization_ = 0;
  size_t serializing_ = 0;
  std::vector<bool> part_made_;
  std::vector<bool> rebuild_taken_;
  size_t first_untaken_rebuild_ = 0;
  std::vector<std::optional<size_t>> held_;  // per Slang worker: the part its child holds
  std::vector<size_t> holders_;              // per part: the Slang workers that hold it
  std::vector<double> seconds_left_;         // per part: its untaken rebuilds' expected time
  size_t next_thread_task_ = 0;
};

}  // namespace

void RunCompilePool(const CompilePoolWork& work) {
  const size_t workers = std::max<size_t>(1, work.workers);
  const bool slang_work = !work.serialization_parts.empty() || !work.rebuild_parts.empty();
  const size_t slang_workers = slang_work ? std::clamp<size_t>(work.slang_workers, 1, workers) : 0;
  Schedule schedule(work, slang_workers);
  const size_t serializations = work.serialization_parts.size();
  // A Slang task changes state its worker's child keeps (the part it holds),
  // which threads would share: without a child, it fails, and says why.
  WorkerChildren children(slang_workers, work.child, WorkerChildren::WithoutChild::kFail);
  // Before any thread starts: no child inherits a lock another thread holds.
  for (size_t worker = 0; worker < slang_workers; ++worker) children.Start(worker).IgnoreError();

  auto loop = [&](size_t worker) {
    while (std::optional<Task> task = schedule.Next(worker)) {
      switch (task->kind) {
        case Task::Kind::kSerialize:
          work.serialize(task->index, worker, [&](std::string_view payload) {
            return children.Run(task->index, worker, payload);
          });
          schedule.Made(task->index);
          break;
        case Task::Kind::kRebuild:
          work.rebuild(task->index, worker, [&](std::string_view payload) {
            return children.Run(serializations + task->index, worker, payload);
          });
          break;
        case Task::Kind::kThread:
          work.run_in_thread(task->index, worker);
          break;
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t worker = 1; worker < workers; ++worker) threads.emplace_back(loop, worker);
  loop(0);
  for (std::thread& thread : threads) thread.join();
}

}  // namespace spreplay
