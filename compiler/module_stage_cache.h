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

#include <optional>

#include "absl/status/status.h"
#include "compiler/compile_cache.h"
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

}  // namespace spreplay
