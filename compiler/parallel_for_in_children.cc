#include "compiler/parallel_for_in_children.h"

#include <algorithm>
#include <string_view>

#include "compiler/parallel_for.h"
#include "compiler/worker_children.h"

namespace spreplay {

void ParallelForInChildren(
    size_t count, size_t workers,
    const std::function<std::string(size_t item, size_t worker)>& child,
    const std::function<void(size_t item, size_t worker, const RunInChild& in_child)>& parent) {
  if (count == 0) return;
  workers = std::max<size_t>(1, std::min(workers, count));
  WorkerChildren children(
      workers, [&](size_t item, size_t worker, std::string_view) { return child(item, worker); },
      WorkerChildren::WithoutChild::kRunInThread);
  // One that cannot be forked now is tried again when its worker needs it.
  for (size_t worker = 0; worker < workers; ++worker) children.Start(worker).IgnoreError();
  ParallelFor(count, workers, [&](size_t item, size_t worker) {
    parent(item, worker, [&](std::string_view) { return children.Run(item, worker); });
  });
}

}  // namespace spreplay
