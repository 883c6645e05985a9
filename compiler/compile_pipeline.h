#pragma once
// Traces in, kernel archive out: replays every recorded kernel through Slang,
// proves the PTX is byte-identical to what the app compiled, builds SASS for
// every requested architecture, packs fatbins and writes the archive.
//
// A kernel that fails is reported with its diagnostics while the rest still
// compile; the archive holds every kernel that succeeded.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/compile_options.h"
#include "compiler/compile_report.h"
#include "recorder/trace_reader.h"

namespace spreplay {

// Replays need the process prepared first, once, before it starts threads:
// PointSlangAtCudaHeaders and TakeOverWorkingDirectoryForNvrtc (the replayer's).
// The trace's kernels in the shard `options` asks for (all of them unsharded).
// A kernel's shard follows from its key, which is content, so every machine
// of a sharded compile agrees, whatever order its traces list kernels in.
std::vector<const KernelRecord*> KernelsOfShard(const Trace& trace, const CompileOptions& options);

absl::StatusOr<CompileReport> CompileTrace(const Trace& trace, const std::string& output,
                                           const CompileOptions& options);

}  // namespace spreplay
