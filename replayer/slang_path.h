#pragma once
// Slang's own path arithmetic (source/core/slang-io.cpp, POSIX flavour),
// reproduced exactly: the snapshot file system must combine and simplify
// paths the way Slang's OS file system did when the kernel was recorded, or
// Slang would derive different found paths, unique identities and #line
// names from the same inputs.

#include <string>
#include <string_view>

namespace spreplay::slang_path {

bool IsDelimiter(char c);
bool IsAbsolute(std::string_view path);

// Removes "." elements and folds ".." into the element before it, like
// Slang's Path::simplify; keeps leading ".." of relative paths.
std::string Simplify(std::string_view path);

// Path::combine: `second` appended to `first` with one delimiter between.
std::string Combine(std::string_view first, std::string_view second);

// Path::getParentDirectory: everything before the last delimiter ("" if none;
// note that this makes the parent of "/a" the empty string, as in Slang).
std::string ParentDirectory(std::string_view path);

// Path::getFileName: everything after the last delimiter.
std::string FileName(std::string_view path);

}  // namespace spreplay::slang_path
