#pragma once
// Writes one line to stderr and never throws. Code that runs inside Slang's
// calls (the hooks) must not let an exception escape into Slang or slangpy:
// fmt::print throws when stderr is a closed pipe (`app 2>&1 | head`).

#include <cstdio>
#include <string_view>

namespace spreplay {

// One lock around both writes, so that lines from other threads never land
// between a message and its newline.
inline void PrintLineToStderr(std::string_view line) noexcept {
  flockfile(stderr);
  fwrite_unlocked(line.data(), 1, line.size(), stderr);
  fputc_unlocked('\n', stderr);
  funlockfile(stderr);
}

}  // namespace spreplay
