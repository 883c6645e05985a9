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
using RunInChildWith = std::function<absl::StatusOr<std::string>(std::string_view payload)>;

class WorkerChildren {
 public:
  WorkerChildren(size_t workers, ChildWork work);
  ~WorkerChildren();  // ends every child
  WorkerChildren(const WorkerChildren&) = delete;
  WorkerChildren& operator=(const WorkerChildren&) = delete;

  // Forks `worker`'s child; false where it cannot. Fork them all before any
  // other thread starts, so that none inherits a lock another thread held.
  bool Start(size_t worker);

  // `item` run in `worker`'s child (forked now if it has none, or run in this
  // thread where it cannot be), or why the child gave no reply: it died, and
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
};

}  // namespace spreplay
