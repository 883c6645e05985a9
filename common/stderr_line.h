#pragma once
// Writes one line to stderr and never throws. Code that runs inside Slang's
// calls (the hooks) must not let an exception escape into Slang or slangpy:
// fmt::print throws when stderr is a closed pipe (`app 2>&1 | head`).

#include <cstdio>
#include <string_view>

namespace spreplay {

inline void PrintLineToStderr(std::string_view line) noexcept {
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fputc('\n', stderr);
}

}  // namespace spreplay
