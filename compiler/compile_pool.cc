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
  }

  // The worker's next task, waiting while all it could take is a rebuild
  // whose part is still being serialized; nullopt once nothing is left.
  std::optional<Task> Next(size_t worker) {
    std::unique_lock lock(mutex_);
    for (;;) {
      const bool slang = worker < slang_workers_;
      if (slang && next_serialization_ < work_.serialization_parts.size()) {
        ++serializing_;
        held_[worker] = work_.serialization_parts[next_serialization_];
        return Task{Task::Kind::kSerialize, next_serialization_++};
      }
      if (slang) {
        if (std::optional<size_t> rebuild = ReadyRebuild(held_[worker])) {
          rebuild_taken_[*rebuild] = true;
          held_[worker] = work_.rebuild_parts[*rebuild];
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
  // The first rebuild not taken of the part `held` (the one the worker's
  // child holds), else the first of any part that is made (every part is,
  // once no serialization is left running). A child that moves to another
  // part is sent that part's IR and loads it in a new session, which costs
  // about as much as a short program's rebuild; so a worker keeps to its
  // part until none of its rebuilds is left.
  std::optional<size_t> ReadyRebuild(std::optional<size_t> held) {
    while (first_untaken_rebuild_ < rebuild_taken_.size() && rebuild_taken_[first_untaken_rebuild_])
      ++first_untaken_rebuild_;
    const bool all_made =
        next_serialization_ == work_.serialization_parts.size() && serializing_ == 0;
    std::optional<size_t> first;
    for (size_t r = first_untaken_rebuild_; r < rebuild_taken_.size(); ++r) {
      if (rebuild_taken_[r]) continue;
      const size_t part = work_.rebuild_parts[r];
      if (held == part) return r;
      if (!first && (all_made || part_made_[part])) {
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
