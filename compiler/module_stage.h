#pragma once
// The modules stage of `spreplay compile`: serializes the Slang modules of
// every recorded session configuration, proves in a fresh session that the
// IR rebuilds every kernel that uses them with byte-identical PTX and an
// identical layout, and archives the modules that pass. That rebuild is also
// the kernel's replay (compile_pipeline.cc): each kernel is compiled once. A module the app
// loaded but built no recorded kernel with is proven by what it is alone:
// its layout, and its entry points' code, from IR as from source
// (schema::ModuleVerification::LAYOUT). The runtime then loads them instead
// of running Slang's front end.

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "archive/archive_writer.h"
#include "compiler/compile_cache.h"
#include "compiler/compile_timeline.h"
#include "compiler/worker_children.h"
#include "recorder/trace_reader.h"

namespace spreplay {

struct ModuleStageReport {
  size_t archived = 0;
  size_t refused = 0;
  uint64_t ir_bytes = 0;
  size_t groups = 0;         // session configurations
  size_t cached_groups = 0;  // of them, unchanged since a compile that used the cache
  size_t warm_groups = 0;    // of them, serialized from one load of their shared modules
  double seconds = 0;        // serializing and rebuilding, summed over the workers
};

// What rebuilding a kernel over its configuration's IR gave: its code, which
// proves the kernel as a replay from source would, and how long the two
// steps it waited for took.
struct RebuiltKernel {
  const absl::StatusOr<std::string>* code = nullptr;
  double serialize_seconds = 0;  // its configuration's modules, from source
  double rebuild_seconds = 0;    // its program over their IR, and its code
};

// The modules stage in steps that a compile runs in its pool beside its
// other work (compile_pool.h):
//
//   ModuleStage stage(trace, candidates, cache, workers, timeline);
//   stage.WarmSlang(servers), before the pool forks its workers' children;
//   stage.Serialize(s, worker, in_child) for every s < serialize_count(),
//   and stage.Rebuild(r, worker, in_child) for every r < rebuild_count(),
//   each once serialization PartOfSerialization(s) == PartOfRebuild(r) is
//   done, each on any worker, where in_child(payload) runs
//   stage.InChild(task, worker, payload) in that worker's child process;
//   stage.RebuiltKernelOf(record) for each kernel, then
//   stage.Finish(verified, writer, progress).
//
// A part is serialized in a worker's child and comes back as bytes
// (serialized_session_codec.h), which go to each other child that rebuilds
// one of its programs: a part's rebuilds need not wait for another part to
// be serialized. The parts of a configuration of several parts are
// serialized instead in copies of one process (fork_server.h) that loaded
// and serialized the modules all their programs share once: WarmSlang
// starts it, and each part then loads only its own modules. Where that
// process cannot load them, its parts go to the workers' children.
//
// `candidates`: the kernels compile may archive; their modules are serialized
// with those of the trace's module loads that no recorded kernel was built
// with, in any recorded configuration. Finish archives to `writer` each module
// that every one of `verified` (the kernels that compiled) built with it
// rebuilt exactly over IR, and each refused one with why. Slang's serializer
// is not byte-reproducible (a few bytes of slangpy's library differ from run
// to run), so `cache` keeps the first IR verified under each module key, and
// later compiles archive those bytes; it also keeps each configuration's
// outcome (compiler/module_stage_cache.h), which an unchanged configuration
// takes instead of being serialized and rebuilt, and each part's, which a
// changed configuration takes for every part whose programs it still holds.
// Its other programs are serialized `programs_per_session` at most to a
// session (0: as many as ProgramsPerSession gives for `workers`), each
// session on any worker (SplitIntoParts). `timeline`, if given, gets a span
// for every session serialized and every program rebuilt.
class ModuleStage {
 public:
  ModuleStage(const Trace& trace, const std::vector<const KernelRecord*>& candidates,
              const CompileCache& cache, size_t workers, size_t programs_per_session,
              CompileTimeline* timeline);
  ~ModuleStage();
  ModuleStage(const ModuleStage&) = delete;
  ModuleStage& operator=(const ModuleStage&) = delete;

  // Makes the Slang every worker's child inherits warm, and starts each
  // configuration's process of shared modules, `servers` of them at most
  // (each holds a Slang session besides the workers' children: what memory
  // holds beyond theirs); before any thread starts.
  void WarmSlang(size_t servers);

  size_t serialize_count() const;
  size_t PartOfSerialization(size_t item) const;
  // The parent's half of a serialization: takes the part's IR that
  // in_child(payload) brought back.
  void Serialize(size_t item, size_t worker, const RunInChild& in_child);

  size_t rebuild_count() const;
  size_t PartOfRebuild(size_t item) const;
  // What the app's own compile of rebuild `item`'s program took, as
  // recorded: what its rebuild is expected to take. 0 for a module's
  // program, which no kernel recorded.
  double RecordedSecondsOfRebuild(size_t item) const;
  // The parent's half of a rebuild: sends the part's IR to a child that asks
  // for it, and takes the program's code over it.
  void Rebuild(size_t item, size_t worker, const RunInChild& in_child);

  // The child's half of task `task`: serialization `task`, or rebuild
  // `task - serialize_count()`; its outcome as bytes for the parent's half.
  std::string InChild(size_t task, size_t worker, std::string_view payload);

  // `record`'s code rebuilt over IR, if its configuration was rebuilt.
  std::optional<RebuiltKernel> RebuiltKernelOf(const KernelRecord& record) const;

  ModuleStageReport Finish(const std::vector<const KernelRecord*>& verified, ArchiveWriter& writer,
                           const std::function<void(const std::string&)>& progress);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace spreplay
