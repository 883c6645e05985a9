#include <fstream>
#include <string_view>

#include "archive/archive.h"
#include "archive/archive_format.h"
#include "archive/describe_archive.h"
#include "archive/verify_blobs.h"
#include "cli/commands.h"
#include "cli/trace_summary.h"
#include "common/fmt_absl.h"
#include "fmt/format.h"
#include "recorder/trace_reader.h"

namespace spreplay {

int RunInspect(std::span<char*> args) {
  std::string path;
  bool json = false;
  for (std::string_view arg : args) {
    if (arg == "--json") {
      json = true;
    } else if (path.empty() && !arg.starts_with("-")) {
      path = arg;
    } else {
      fmt::print(stderr, "usage: spreplay inspect FILE [--json]\n");
      return 2;
    }
  }
  if (path.empty()) {
    fmt::print(stderr, "usage: spreplay inspect FILE [--json]\n");
    return 2;
  }
  if (StartsLikeAnArchive(path)) {
    absl::StatusOr<Archive> archive = Archive::Open(path);
    if (!archive.ok()) {
      fmt::print(stderr, "spreplay: {}\n", archive.status());
      return 1;
    }
    fmt::print("{}", DescribeArchive(*archive, json));
    const BlobDamage damage = VerifyEveryBlob(*archive);
    for (const std::string& message : damage.damaged) fmt::print(stderr, "spreplay: {}\n", message);
    if (damage.damaged.empty()) return 0;
    fmt::print(stderr, "spreplay: {}\n", DamageSummary(damage, path));
    return 1;
  }
  absl::StatusOr<Trace> trace = Trace::Read(path);
  if (!trace.ok()) {
    fmt::print(stderr, "spreplay: {}\n", trace.status());
    return 1;
  }
  fmt::print("{}", json ? DescribeTraceJson(*trace) : DescribeTrace(*trace));
  return 0;
}

}  // namespace spreplay
