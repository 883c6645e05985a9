#include "build_info/slang_build.h"
#include "cli/commands.h"
#include "fmt/format.h"
#include "recorder/trace_log.h"

namespace spreplay {

int RunVersion(std::span<char*>) {
  fmt::print("spreplay {} (trace format {})\n", SPREPLAY_VERSION, kTraceFormatVersion);
  fmt::print("this tool replays with Slang {}\n", kSlangBuild);
  fmt::print("supports {}\n", kSupportedBuilds);
  return 0;
}

}  // namespace spreplay
