#pragma once
// The one pool a compile's work runs in. Each configuration's modules are
// serialized in parts, each part's programs are rebuilt over its IR once
// that part is serialized (and no part waits for a worker to serialize it),
// whatever the other parts are doing, and SASS is built from the recorded
// PTX in whatever time the Slang work leaves: no stage waits for another to
// finish, so the compile takes about as long as its longest chain, a part
// and its slowest program, or its total work over the workers, whichever is
// more. Serializations go first since each makes work for the others: with
// more parts than workers, a part's rebuilds may wait for the last part to
// be taken, not to be made.

#include <cstddef>
#include <functional>
#include <vector>

#include "compiler/worker_children.h"

namespace spreplay {

struct CompilePoolWork {
  size_t workers = 1;
  // Of the workers, the first `slang_workers` hold a Slang session each, in
  // a child process of their own (WorkerChildren): memory bounds how many
  // may (memory_budget.h). The others only run thread tasks.
  size_t slang_workers = 1;

  // Serialization s makes part serialization_parts[s]; rebuild r needs part
  // rebuild_parts[r]. Both run in the worker's child: `child` gets task s,
  // or serialization_parts.size() + r. Every serialization is taken before
  // any rebuild, and rebuilds in their order, each once its part is made; a
  // worker takes those of the part its child last serialized or rebuilt
  // first, which its child holds.
  std::vector<size_t> serialization_parts;
  std::vector<size_t> rebuild_parts;
  // What each rebuild is expected to take (the app's recorded compile of
  // its program). A worker whose child holds no part with rebuilds left
  // takes one of another part only where that part's holders have more
  // work ahead of them than loading its IR and rebuilding the program
  // costs it: else they finish sooner, and the load is CPU time spent for
  // nothing. Absent: every rebuild is worth a move.
  std::vector<double> rebuild_seconds;
  ChildWork child;
  std::function<void(size_t serialization, size_t worker, const RunInChild& in_child)> serialize;
  std::function<void(size_t rebuild, size_t worker, const RunInChild& in_child)> rebuild;

  // Work in this process, on any worker, in order: a Slang worker takes one
  // when no Slang task is ready for it.
  size_t thread_tasks = 0;
  std::function<void(size_t task, size_t worker)> run_in_thread;
};

// Runs every task of `work` once and returns when all are done.
void RunCompilePool(const CompilePoolWork& work);

}  // namespace spreplay
