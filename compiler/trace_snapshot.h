#pragma once
// Gathers from a trace everything the replayer needs besides the component
// tree: the recorded bytes of every file the program's modules read, and the
// string-loaded modules they import.

#include "absl/status/statusor.h"
#include "recorder/trace_reader.h"
#include "replayer/snapshot.h"

namespace spreplay {

absl::StatusOr<Snapshot> SnapshotFor(const Trace& trace, const ComponentPtr& program);

}  // namespace spreplay
