#include "cli/commands.h"
#include "fmt/format.h"

namespace spreplay {

int RunMerge(std::span<char*> args) {
  fmt::print(stderr, "spreplay merge: not yet available\n");
  return 1;
}

}  // namespace spreplay
