#include "interpose/imported_modules.h"

#include <algorithm>

namespace spreplay {

std::vector<std::string> ImportedModuleNames(std::string_view text) {
  std::vector<std::string> names;
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (!line.starts_with("import ") || !line.ends_with(';')) continue;
    std::string_view name = line.substr(7, line.size() - 8);
    if (name.size() >= 2 && name.front() == '"' && name.back() == '"')
      name = name.substr(1, name.size() - 2);
    if (!name.empty()) names.emplace_back(name);
  }
  return names;
}

}  // namespace spreplay
