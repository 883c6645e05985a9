#include "cli/commands.h"
#include "fmt/format.h"
#include "recorder/trace_log.h"

namespace spreplay {

int RunVersion(std::span<char*>) {
  fmt::print("spreplay {} (trace format {})\n", SPREPLAY_VERSION, kTraceFormatVersion);
  return 0;
}

}  // namespace spreplay
