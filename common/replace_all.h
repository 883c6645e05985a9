#pragma once
// Replaces every occurrence of `from` in `text` with `to`, left to right;
// the search resumes after each replacement, so `to` may contain `from`.

#include <string>
#include <string_view>

namespace spreplay {

inline void ReplaceAll(std::string& text, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

}  // namespace spreplay
