#pragma once
// ISlangBlobs over bytes spreplay hands to Slang or to Slang's callers: a
// view of memory someone else keeps alive (a kernel in a memory-mapped
// archive, which the driver reads once: no copy), or bytes the blob shares
// ownership of (snapshot files, messages). Text is zero-terminated one past
// the reported size, which Slang relies on for paths and diagnostics.

#include <cstddef>
#include <memory>
#include <string>

#include "slang.h"

namespace spreplay {

// Each returns a blob with one reference, owned by the caller.
ISlangBlob* NewBorrowedBlob(const void* data, size_t size);
ISlangBlob* NewSharedBlob(std::shared_ptr<const std::string> bytes);
ISlangBlob* NewOwnedBlob(std::string text);

// The blob's bytes as text; empty for a null blob.
std::string BlobToString(ISlangBlob* blob);

}  // namespace spreplay
