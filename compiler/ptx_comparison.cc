#include "compiler/ptx_comparison.h"

#include "fmt/format.h"

namespace spreplay {

std::string DescribePtxDifference(std::string_view recorded, std::string_view replayed) {
  if (recorded == replayed) return "";
  size_t line = 1, start = 0, at = 0;
  const size_t common = std::min(recorded.size(), replayed.size());
  while (at < common && recorded[at] == replayed[at]) {
    if (recorded[at] == '\n') {
      ++line;
      start = at + 1;
    }
    ++at;
  }
  auto line_of = [start](std::string_view text) {
    const size_t end = text.find('\n', start);
    return std::string(text.substr(std::min(start, text.size()), end == std::string_view::npos
                                                                     ? std::string_view::npos
                                                                     : end - start));
  };
  return fmt::format(
      "PTX differs from the recorded PTX at line {} (byte {}):\n  recorded: {}\n  replayed: {}\n"
      "  ({} vs {} bytes; a different Slang or NVRTC than the app used?)",
      line, at, line_of(recorded), line_of(replayed), recorded.size(), replayed.size());
}

}  // namespace spreplay
