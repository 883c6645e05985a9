#pragma once
// What the modules stage concluded for a session configuration, remembered in
// the compile cache, so that recompiling a trace whose configuration did not
// change neither serializes nor re-verifies its modules.
//
// An outcome is named by everything the stage reads for the configuration:
// the Slang build and spreplay's version, the session's settings and search
// locations, every verified kernel's key and recorded PTX, the component tree
// of each of its programs and of each module the app asked for, with every
// path and every file's content digest (paths go into archived metadata, and
// content into the verdict), and the keys of the configuration's other
// recorded kernels. A change to any of them names another entry. An outcome
// is stored with its refused modules unless one was refused by something of
// that run rather than by the trace (GroupOutcome::refused_by_this_run).
//
// A configuration that changed keeps what did not: what each part of its
// programs that one session verified proved is remembered under the
// identities of its programs, and the configuration remembers which parts it
// was last verified in. A compile that finds one of those parts whole again
// decides it from that evidence, and only the configuration's other programs
// (a call site the app added, say) are serialized and rebuilt.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "compiler/compile_cache.h"
#include "compiler/module_parts.h"
#include "compiler/session_group.h"

namespace spreplay {

Digest ModuleStageOutcomeName(const Trace& trace, const SessionGroup& group);

// The name of a module's IR verified under its key: Slang's serializer is not
// byte-reproducible, so every compile archives the first bytes verified.
Digest VerifiedIrName(const Digest& module_key);

// The remembered outcome with each archived module's IR, or nullopt when the
// entry or any of its modules' IR is missing or damaged.
std::optional<GroupOutcome> LoadModuleStageOutcome(const CompileCache& cache, const Digest& name);

// Remembers `outcome`, whose archived modules' IR must already be in the
// cache under VerifiedIrName.
absl::Status StoreModuleStageOutcome(const CompileCache& cache, const Digest& name,
                                     const GroupOutcome& outcome);

// What the modules stage reads of one program of a configuration: its
// kernel's key and recorded PTX (`record`, null for a module no kernel was
// built with) and its component tree, paths and file contents included.
Digest ModuleProgramIdentity(const Trace& trace, const KernelRecord* record,
                             const ComponentPtr& program);

// Fills in each archived module's IR as the cache pinned it (VerifiedIrName);
// false if one was never verified.
bool TakeVerifiedIr(const CompileCache& cache,
                    std::vector<std::pair<ModuleMetadata, std::string>>& archived);

// The name of the evidence of a part whose programs are `identities`, in
// order, in `group`. `request_directories`: the group's (GroupWork).
Digest ModulePartEvidenceName(const SessionGroup& group,
                              const std::vector<std::string>& request_directories,
                              std::span<const Digest> identities);

// A part's evidence as the cache remembers it, or nullopt when the entry is
// missing or damaged.
std::optional<PartEvidence> LoadModulePartEvidence(const CompileCache& cache, const Digest& name);
absl::Status StoreModulePartEvidence(const CompileCache& cache, const Digest& name,
                                     const PartEvidence& evidence);

// One program of a part the cache remembers.
struct PartProgram {
  Digest identity;                             // ModuleProgramIdentity
  std::optional<ModuleNodeKey> unused_module;  // for a module no kernel was built with
};

// The parts `group`'s configuration was last verified in, each its programs
// in order; none when the cache remembers none.
std::vector<std::vector<PartProgram>> LoadModuleStageParts(const CompileCache& cache,
                                                           const SessionGroup& group);
absl::Status StoreModuleStageParts(const CompileCache& cache, const SessionGroup& group,
                                   const std::vector<std::vector<PartProgram>>& parts);

}  // namespace spreplay
