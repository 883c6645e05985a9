#pragma once
// ISlangBlob implementations for what the replayer hands Slang: file bytes
// shared with the snapshot, and strings (paths) that Slang expects to be
// zero-terminated past their reported size.

#include <memory>
#include <string>

#include "replayer/com_ptr.h"
#include "slang.h"

namespace spreplay {

// A blob over bytes owned by a snapshot; the blob keeps them alive.
ComPtr<ISlangBlob> NewSharedBytesBlob(std::shared_ptr<const std::string> bytes);

// A blob holding a copy of `text`, zero-terminated.
ComPtr<ISlangBlob> NewStringBlob(std::string text);

// The blob's bytes as text; empty for a null blob.
std::string BlobToString(ISlangBlob* blob);

}  // namespace spreplay
