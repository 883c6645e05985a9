// spreplay: the command-line tool. Each subcommand lives in its own file.

#include <csignal>
#include <cstdio>
#include <span>
#include <string_view>

#include "cli/commands.h"
#include "fmt/format.h"

namespace {

constexpr std::string_view kUsage = R"(usage: spreplay COMMAND [ARGS]

commands:
  inspect FILE [--json]       describe a trace or a kernel archive
  merge TRACE... -o OUT       merge traces into one (de-duplicated)
  compile TRACE... -o OUT     build a kernel archive from traces (no GPU needed)
  explain TRACE ARCHIVE       say why each kernel of TRACE is or is not served by ARCHIVE
  extract ARCHIVE KEY -o OUT  write one archived kernel (a fatbin, or an OptiX program's PTX)
  verify ARCHIVE              check every kernel image and module IR against its checksum
  version                     print versions

environment (in the app's process):
  SLANGPY_RECORD=trace.capnp       record every call site's kernel
  SLANGPY_KERNELS=kernels.sprk     serve kernels from an archive
)";

}  // namespace

int main(int argc, char** argv) {
  // Output piped into `head` should end the tool quietly, as it ends any
  // Unix tool. The Python launcher hands over SIGPIPE ignored, which would
  // turn that into a failed write instead.
  std::signal(SIGPIPE, SIG_DFL);
  std::span<char*> args(argv + 1, argc > 0 ? argc - 1 : 0);
  if (args.empty() || std::string_view(args[0]) == "--help" || std::string_view(args[0]) == "-h") {
    fmt::print(args.empty() ? stderr : stdout, "{}", kUsage);
    return args.empty() ? 2 : 0;
  }
  const std::string_view command = args[0];
  std::span<char*> rest = args.subspan(1);
  if (command == "compile") return spreplay::RunCompile(rest);
  if (command == "explain") return spreplay::RunExplain(rest);
  if (command == "extract") return spreplay::RunExtract(rest);
  if (command == "inspect") return spreplay::RunInspect(rest);
  if (command == "merge") return spreplay::RunMerge(rest);
  if (command == "verify") return spreplay::RunVerify(rest);
  if (command == "version") return spreplay::RunVersion(rest);
  fmt::print(stderr, "spreplay: unknown command '{}'\n\n{}", command, kUsage);
  return 2;
}
