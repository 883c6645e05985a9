#pragma once
// A child process per worker, forked from this one: each serves its
// worker's requests, one at a time, for as long as the worker needs it. A
// child inherits this process's memory as it is at the fork, copy on write
// (a warm Slang costs it nothing), contends with no other worker's
// allocations, and takes only its own request down when Slang crashes.

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace spreplay {

// What a child does with one request: `item`, and what the parent sent with
// it; its reply goes back to the parent.
using ChildWork = std::function<std::string(size_t item, size_t worker, std::string_view payload)>;

// Runs a request in a worker's child with `payload`, and returns its reply or
// why there is none (WorkerChildren::Run).
using RunInChild = std::function<absl::StatusOr<std::string>(std::string_view payload)>;

class WorkerChildren {
 public:
  // What Run does where no child can be forked (no memory, no processes).
  enum class WithoutChild {
    kRunInThread,  // run the work in the calling thread: it keeps no state a thread shares
    kFail,         // answer with why
  };

  WorkerChildren(size_t workers, ChildWork work, WithoutChild without_child);
  ~WorkerChildren();  // ends every child
  WorkerChildren(const WorkerChildren&) = delete;
  WorkerChildren& operator=(const WorkerChildren&) = delete;

  // Forks `worker`'s child; why not where it cannot. Fork them all before
  // any other thread starts. A child that died is forked again by the next
  // Run, maybe while other threads run: a child touches nothing but its own
  // work's state, and closes every descriptor but its socket and stdio, so
  // that it keeps no other thread's pipe open.
  absl::Status Start(size_t worker);

  // `item` run in `worker`'s child (forked now if it has none), or why the
  // child gave no reply: it died, or threw (its message goes to stderr), and
  // the worker's next request gets a new one.
  absl::StatusOr<std::string> Run(size_t item, size_t worker, std::string_view payload = {});

 private:
  struct Child {
    pid_t pid = -1;
    int socket = -1;
  };
  // Ends `worker`'s child, if it has one; how it ended.
  std::string Stop(size_t worker);

  std::mutex mutex_;
  std::vector<Child> children_;
  const ChildWork work_;
  const WithoutChild without_child_;
};

}  // namespace spreplay
