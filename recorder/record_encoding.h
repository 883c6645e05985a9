#pragma once
// Conversions between spreplay's in-memory descriptions of Slang state and
// their trace records. Decoding recomputes every content digest and refuses a
// record whose digest does not match: a trace can be damaged or hand-edited,
// and a kernel must never be keyed by content it does not really have.

#include <functional>

#include "absl/status/statusor.h"
#include "common/capnp_digest.h"
#include "interpose/component.h"
#include "interpose/session_config.h"
#include "schema/trace.capnp.h"

namespace spreplay {

void EncodeSession(const SessionConfig& config, trace_schema::Session::Builder out);
absl::StatusOr<SessionConfig> DecodeSession(trace_schema::Session::Reader record);

// Encodes one node; its children are referenced by digest.
void EncodeComponent(const Component& component, trace_schema::Component::Builder out);

// Rebuilds a node whose children were already rebuilt (`child` resolves a
// digest), and checks that it hashes to the digest the record claims.
using ChildResolver = std::function<absl::StatusOr<ComponentPtr>(const Digest&)>;
absl::StatusOr<ComponentPtr> DecodeComponent(trace_schema::Component::Reader record,
                                             const ChildResolver& child);

}  // namespace spreplay
