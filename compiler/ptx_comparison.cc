#include "compiler/ptx_comparison.h"

#include "fmt/format.h"

namespace spreplay {
namespace {

// A `.file` directive's text before and after its quoted file name.
struct FileDirective {
  std::string_view head;  // e.g. "\t.file\t3 "
  std::string_view tail;  // after the closing quote (a timestamp and size, if any)
};

bool ParseFileDirective(std::string_view line, FileDirective& out) {
  const size_t text = line.find_first_not_of(" \t");
  if (text == std::string_view::npos) return false;
  const std::string_view keyword = line.substr(text, 6);
  if (keyword != ".file\t" && keyword != ".file ") return false;
  const size_t open = line.find('"');
  const size_t close = line.rfind('"');
  if (open == std::string_view::npos || close == open) return false;
  out.head = line.substr(0, open);
  out.tail = line.substr(close + 1);
  return true;
}

bool SameLine(std::string_view recorded, std::string_view replayed) {
  if (recorded == replayed) return true;
  FileDirective a, b;
  return ParseFileDirective(recorded, a) && ParseFileDirective(replayed, b) && a.head == b.head &&
         a.tail == b.tail;
}

// The next line of `text` from `at` (without its newline), advancing `at`.
std::string_view NextLine(std::string_view text, size_t& at) {
  const size_t end = text.find('\n', at);
  const std::string_view line =
      text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
  at = end == std::string_view::npos ? text.size() + 1 : end + 1;
  return line;
}

}  // namespace

std::string DescribePtxDifference(std::string_view recorded, std::string_view replayed) {
  if (recorded == replayed) return "";
  size_t line = 1, at_recorded = 0, at_replayed = 0;
  while (at_recorded <= recorded.size() && at_replayed <= replayed.size()) {
    const size_t start = at_recorded;
    const std::string_view a = NextLine(recorded, at_recorded);
    const std::string_view b = NextLine(replayed, at_replayed);
    if (!SameLine(a, b)) {
      return fmt::format(
          "PTX differs from the recorded PTX at line {} (byte {}):\n  recorded: {}\n  replayed: "
          "{}\n  ({} vs {} bytes; a different Slang, NVRTC or CUDA headers than the app used?)",
          line, start, a, b, recorded.size(), replayed.size());
    }
    ++line;
  }
  if (at_recorded > recorded.size() && at_replayed > replayed.size()) return "";
  return fmt::format(
      "PTX differs from the recorded PTX after line {}: one ends there ({} vs {} bytes; a "
      "different Slang or NVRTC than the app used?)",
      line - 1, recorded.size(), replayed.size());
}

}  // namespace spreplay
