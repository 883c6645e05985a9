#pragma once
// The work of the modules stage for one recorded session configuration: its
// programs (the kernels compile may archive, and the modules the app asked
// for that no kernel was built with), split into parts whose files and
// string modules agree, each serialized in one session and rebuilt program
// by program over that IR; then what each part's rebuilds say of each of its
// modules, and the configuration's verdict from all its parts.

#include <cstddef>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "archive/archive_writer.h"
#include "compiler/session_group.h"
#include "recorder/trace_reader.h"
#include "replayer/ir_modules.h"

namespace spreplay {

// What one set of a group's programs, verified together, says of each module
// they use, by module key.
struct PartitionOutcome {
  std::vector<std::pair<ModuleMetadata, std::string>> archived;
  std::vector<std::pair<Digest, UnservedModule>> refused;
  bool refused_by_this_run = false;  // as GroupOutcome's
};

// One part of a group (ConsistentParts): its programs are serialized in one
// session, then each is rebuilt over that IR on whichever worker is free.
struct PartWork {
  size_t group = 0;
  std::vector<RecordedProgram> programs;
  std::vector<const KernelRecord*> records;  // null for a module no kernel used
  std::vector<size_t> indices;               // of each program in its GroupWork
  SerializedSession serialized;
  // `serialized` as bytes, for the workers' children that rebuild its
  // programs: kept until the last of them is done.
  std::string encoded;
  std::vector<absl::StatusOr<std::string>> codes;
  std::vector<double> rebuild_seconds;
  double serialize_seconds = 0;
  // What the app's compiles of its kernels took: the longest parts start first.
  double recorded_seconds = 0;
  // Why it has no serialized session, if so: no Slang could be set up, or
  // its worker process died or could not be started.
  std::string builder_error;
};

// What the app's compile of `records[program]` took, as recorded; 0 for a
// module no kernel used.
double RecordedSeconds(const std::vector<const KernelRecord*>& records, size_t program);

// One group's programs, and what its parts share.
struct GroupWork {
  std::deque<Snapshot> snapshots;  // stable addresses for RecordedProgram
  std::vector<RecordedProgram> programs;
  std::vector<const KernelRecord*> records;  // null for a module no kernel used
  absl::flat_hash_set<ModuleNodeKey> kernel_modules;
  std::vector<std::string> request_directories;
  std::vector<size_t> parts;  // indices into the stage's parts, to verify
  // The outcomes of the group's other parts, which the cache remembered.
  std::vector<PartitionOutcome> remembered;
};

// How many of a configuration's programs one Slang session serializes.
struct SessionSize {
  size_t programs_per_session = 0;  // the user's choice; 0: ProgramsPerSession decides
  size_t workers = 1;
  // With ProgramsPerSession deciding: the kernel the app took longest to
  // compile of a set of programs, if it took more than this longer than the
  // set's next longest, is serialized in a session of its own, so that its
  // rebuild starts once its own modules are serialized rather than the whole
  // set's: on many workers, that chain is the compile's wall time. It costs
  // CPU: the app's modules it shares with the set loaded and serialized
  // again, its IR sent, and a process that loads slangpy's library for both
  // sessions to start from (ModuleStage). That buys nothing where the next
  // kernel's chain, which waits for the whole set, ends about as late. So
  // the compile gives it an even share of the whole compile's work: the
  // kernels' recorded seconds over the workers. 0: never.
  double own_session_seconds = 0;
};

// A session of its own costs a part what its programs share with the
// configuration's other parts. The modules every program loads (slangpy's
// library) are loaded once per configuration, and each part's session starts
// from a copy of them (ModuleStage); the app's modules that several parts
// use are loaded by each, which costs slangpy's suite's largest
// configuration (704 programs) a few seconds a part on the 2-core CPU machine.
// So `programs` are split only into sessions of kProgramsWorthASession at
// least, and into no more sessions than workers to run them: a configuration
// of hundreds of kernels no longer serializes on one worker while the others
// wait, and one of a few dozen is one session. Each session running at once
// holds its own Slang (about 0.7 GB for the suite's).
inline constexpr size_t kProgramsWorthASession = 64;
size_t ProgramsPerSession(size_t programs, const SessionSize& size);  // 1 at least

// The group's programs: each kernel's that compile may archive, then each
// module the app asked for that no recorded kernel was built with.
GroupWork GatherGroup(const Trace& trace, const SessionGroup& group);

// `programs` (indices into work.programs), split into parts (added to
// `parts`, and to work.parts) that sessions serialize and rebuild, of
// ProgramsPerSession programs at most, the heaviest alone when it is worth a
// session (SessionSize::own_session_seconds).
void SplitIntoParts(GroupWork& work, std::span<const size_t> programs, size_t group_index,
                    const SessionSize& size, std::vector<PartWork>& parts);

// What a part's session and rebuilds proved of its modules, in the terms its
// verdict is decided in: the compile cache keeps it, so that a part whose
// configuration changed around it (a module no kernel used became a kernel's
// module, say) is decided again rather than serialized and rebuilt again.
struct PartEvidence {
  struct Module {
    ModuleMetadata metadata;  // verified_by aside, which the decision sets
    ModuleNodeKey node;
    std::string refusal;  // its own: it loads from source only, or declares a user attribute
    std::vector<size_t> imports;  // of the modules before it
  };
  struct Program {
    bool kernel = false;  // else a module no kernel used, proven by its layout
    // Counts for nothing: a kernel that did not compile (as if the app had
    // not built it), or a module no kernel used that a kernel now is.
    bool left_out = false;
    std::string failure;          // why it does not stand for its modules, or ""
    std::vector<size_t> modules;  // those it used
  };
  std::vector<Module> modules;       // as the part's session loaded them
  std::vector<Program> programs;     // as the part holds them
  bool refused_by_this_run = false;  // as PartitionOutcome's
};

// What `part`'s rebuilds over IR prove. `verified`: the kernels that
// compiled; the part's other kernels are left out.
PartEvidence EvidenceOf(const Trace& trace, const SessionGroup& group, const PartWork& part,
                        const std::vector<std::string>& request_directories,
                        const absl::flat_hash_set<const KernelRecord*>& verified);

// What `evidence` says of each module, given `kernel_modules`, the modules of
// every recorded kernel of the group, which only kernels decide. Archived
// modules come with ir_of(their index in evidence.modules).
PartitionOutcome Decide(const PartEvidence& evidence,
                        const absl::flat_hash_set<ModuleNodeKey>& kernel_modules,
                        const std::function<std::string(size_t module)>& ir_of);

// A module that several parts use (slangpy's library, say) is archived
// once, and only if it passed in every part that used it.
GroupOutcome CombineParts(std::vector<PartitionOutcome> parts);

// A label for the timeline: the part's first kernel, or its first module.
std::string PartLabel(const Trace& trace, const PartWork& part);

}  // namespace spreplay
