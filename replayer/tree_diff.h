#pragma once
// Compares a rebuilt component tree with the recorded one by content digest.
// Equal root digests mean the replay compiled exactly what the application
// compiled; otherwise the error names the node where they part.

#include "absl/status/status.h"
#include "interpose/component.h"

namespace spreplay {

// OK when the digests agree; else FailedPrecondition naming the deepest node
// whose digest differs (its place in the tree, its kind and name) and, for a
// module, which of its name, source and dependencies differ.
absl::Status CheckSameContent(const ComponentPtr& recorded, const ComponentPtr& rebuilt);

}  // namespace spreplay
