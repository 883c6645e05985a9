#pragma once
// Serializes a module a replay session holds, as loadModuleFromIRBlob reads it.

#include <string>

#include "absl/status/statusor.h"
#include "interpose/component.h"
#include "slang.h"

namespace spreplay {

// The serialized IR of `module`, which `session` loaded as `description`
// says. With `with_source_locations`, the IR carries the source location of
// every instruction, which a session with debug information needs: its
// kernels' line tables come from them.
absl::StatusOr<std::string> SerializeModule(slang::ISession* session, slang::IModule* module,
                                            const Component& description,
                                            bool with_source_locations);

}  // namespace spreplay
