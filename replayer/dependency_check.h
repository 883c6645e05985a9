#pragma once
// Checks, before any compiling, that a replay session can serve every file
// the recorded modules read, with the recorded content. This turns a missing
// or changed file into an error that names it, instead of a Slang error about
// an import, or a digest mismatch after the whole front end ran.

#include <vector>

#include "absl/status/status.h"
#include "interpose/component.h"
#include "replayer/replay_session.h"

namespace spreplay {

// `modules` in load order; string modules among them account for their
// pseudo paths.
absl::Status CheckDependencies(const std::vector<ComponentPtr>& modules, ReplaySession& session);

}  // namespace spreplay
