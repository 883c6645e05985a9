#pragma once
// A SerializedSession as bytes, for the trip between the worker process that
// serialized a configuration's modules and those that rebuild its programs
// (compile_pool.h). Both ends are the same spreplay build.

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "replayer/ir_modules.h"

namespace spreplay {

std::string EncodeSerializedSession(const SerializedSession& session);

// Every module description is checked against its digest, as a trace's are.
absl::StatusOr<SerializedSession> DecodeSerializedSession(std::string_view bytes);

}  // namespace spreplay
