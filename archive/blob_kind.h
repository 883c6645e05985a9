#pragma once
// How tools and messages name a blob kind.

#include <string>

#include "schema/archive.capnp.h"

namespace spreplay {

// "fatbin", "ptx", "cubin", "unspecified"; "kind-N" for kinds newer than this build.
std::string BlobKindName(schema::BlobKind kind);

}  // namespace spreplay
