#pragma once
// The modules a Slang text imports, read the way slangpy writes its wrappers.

#include <string>
#include <string_view>
#include <vector>

namespace spreplay {

// The names `text` imports on lines of their own: `import name;` or
// `import "path";` (the quotes dropped).
std::vector<std::string> ImportedModuleNames(std::string_view text);

}  // namespace spreplay
