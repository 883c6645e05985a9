#pragma once
// ParallelFor whose work runs in child processes forked from this one
// (worker_children.h). A child inherits the parent's memory as it is at the
// fork, copy on write: Slang's global sessions, already warm, cost it
// nothing. Its allocations and page faults contend with no other
// worker's, as Slang's code generation on many threads of one process does
// (3.4-4.8x the CPU time on the H200's machine:
// bench/results/2026-12-04-h200-synthetic-compile). And a child that crashes
// in Slang takes only its item down, not the compile.

#include <cstddef>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "compiler/worker_children.h"

namespace spreplay {

// Runs parent(item, worker, in_child) for item in [0, count) on `workers`
// threads, as ParallelFor does; in_child({}) runs child(item, worker) in that
// worker's child process. A worker's child serves every item of that worker,
// so what `child` keeps between items (a Slang session) stays warm; a child
// that died is replaced for the worker's next item.
//
// The children are forked by this thread before any worker thread starts,
// so none inherits a lock another thread held; `child` runs in a copy of
// this process as it was then, and must touch nothing the worker threads
// change. Where a child cannot be forked, `child` runs in the worker's thread.
void ParallelForInChildren(
    size_t count, size_t workers,
    const std::function<std::string(size_t item, size_t worker)>& child,
    const std::function<void(size_t item, size_t worker, const RunInChild& in_child)>& parent);

}  // namespace spreplay
