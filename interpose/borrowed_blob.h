#pragma once
// An ISlangBlob over bytes that someone else keeps alive, such as an entry of
// a memory-mapped archive. Handing Slang's caller a view avoids copying a
// kernel that the driver will read exactly once.

#include <cstddef>
#include <string>

#include "slang.h"

namespace spreplay {

// Returns a blob with one reference, owned by the caller.
ISlangBlob* NewBorrowedBlob(const void* data, size_t size);
// A blob that owns a copy of `text` (diagnostics).
ISlangBlob* NewOwnedBlob(std::string text);

}  // namespace spreplay
