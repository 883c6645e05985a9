#pragma once
// How tools and messages name a blob kind.

#include <string_view>

#include "schema/archive.capnp.h"

namespace spreplay {

// "fatbin", "ptx", "cubin"; "unspecified" for anything else.
std::string_view BlobKindName(schema::BlobKind kind);

}  // namespace spreplay
