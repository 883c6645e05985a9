#include "replayer/slang_path.h"

#include <cstddef>
#include <vector>

namespace spreplay::slang_path {
namespace {

// Path::split: one element per delimiter-separated run, with a trailing empty
// element dropped unless the path is the root ("/" splits into "", "").
std::vector<std::string_view> Split(std::string_view path) {
  std::vector<std::string_view> elements;
  size_t start = 0;
  while (start < path.size()) {
    size_t end = start;
    while (end < path.size() && !IsDelimiter(path[end])) ++end;
    elements.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  if (elements.size() > 1 && elements.back().empty()) {
    // Slang's isDriveSpecification treats an empty first element (a root) as
    // a drive, which keeps "/" as {"", ""}.
    if (elements.size() == 2 && elements.front().empty()) return elements;
    elements.pop_back();
  }
  return elements;
}

size_t LastDelimiter(std::string_view path) {
  for (size_t i = path.size(); i > 0; --i) {
    if (IsDelimiter(path[i - 1])) return i - 1;
  }
  return std::string_view::npos;
}

}  // namespace

bool IsDelimiter(char c) { return c == '/' || c == '\\'; }

bool IsAbsolute(std::string_view path) { return !path.empty() && IsDelimiter(path.front()); }

std::string Simplify(std::string_view path) {
  std::vector<std::string_view> elements = Split(path);
  for (size_t i = 0; i < elements.size(); ++i) {
    if (elements[i] == "." && elements.size() > 1) {
      elements.erase(elements.begin() + static_cast<std::ptrdiff_t>(i));
      --i;
    } else if (elements[i] == ".." && i > 0) {
      const std::string_view before = elements[i - 1];
      if (before == ".." || (i == 1 && before.empty())) continue;
      elements.erase(elements.begin() + static_cast<std::ptrdiff_t>(i - 1),
                     elements.begin() + static_cast<std::ptrdiff_t>(i + 1));
      i -= 2;
    }
  }
  if (elements.empty()) return ".";
  if (elements.size() == 1 && elements.front().empty()) return "/";
  std::string joined;
  for (size_t i = 0; i < elements.size(); ++i) {
    if (i > 0) joined += '/';
    joined += elements[i];
  }
  return joined;
}

std::string Combine(std::string_view first, std::string_view second) {
  std::string combined(first);
  if (first.empty() || second.empty()) return first.empty() ? std::string(second) : combined;
  if (!IsDelimiter(combined.back())) combined += '/';
  combined += second;
  return combined;
}

std::string ParentDirectory(std::string_view path) {
  const size_t at = LastDelimiter(path);
  return at == std::string_view::npos ? "" : std::string(path.substr(0, at));
}

std::string FileName(std::string_view path) {
  const size_t at = LastDelimiter(path);
  return std::string(at == std::string_view::npos ? path : path.substr(at + 1));
}

}  // namespace spreplay::slang_path
