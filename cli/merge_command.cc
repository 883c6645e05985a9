#include <algorithm>
#include <string_view>
#include <vector>

#include "archive/archive_format.h"
#include "archive/archive_merge.h"
#include "cli/commands.h"
#include "common/fmt_absl.h"
#include "fmt/format.h"
#include "recorder/trace_merge.h"

namespace spreplay {

namespace {

// Archives compiled apart, e.g. by `spreplay compile --shard K/N`.
int MergeArchiveFiles(const std::vector<std::string>& inputs, const std::string& output) {
  absl::StatusOr<ArchiveMergeSummary> summary = MergeArchives(inputs, output);
  if (!summary.ok()) {
    fmt::print(stderr, "spreplay merge: {}\n", summary.status());
    return 1;
  }
  fmt::print(stderr, "{}: {} kernel(s), {} module(s) as verified IR from {} archives{}\n", output,
             summary->kernels, summary->modules, inputs.size(),
             summary->modules_dropped
                 ? fmt::format("; {} module(s) left out: another archive refused them",
                               summary->modules_dropped)
                 : "");
  return 0;
}

}  // namespace

int RunMerge(std::span<char*> args) {
  std::vector<std::string> inputs;
  std::string output;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if ((arg == "-o" || arg == "--output") && i + 1 < args.size()) {
      output = args[++i];
    } else if (arg.starts_with("-")) {
      fmt::print(stderr,
                 "usage: spreplay merge TRACE... -o OUT | spreplay merge ARCHIVE... -o OUT\n");
      return 2;
    } else {
      inputs.emplace_back(arg);
    }
  }
  if (inputs.empty() || output.empty()) {
    fmt::print(stderr,
               "usage: spreplay merge TRACE... -o OUT | spreplay merge ARCHIVE... -o OUT\n");
    return 2;
  }
  const size_t archives = std::count_if(inputs.begin(), inputs.end(), StartsLikeAnArchive);
  if (archives == inputs.size()) return MergeArchiveFiles(inputs, output);
  if (archives > 0) {
    fmt::print(stderr,
               "spreplay merge: give traces or archives, not both: merge the traces, then compile "
               "them\n");
    return 2;
  }
  absl::StatusOr<MergeSummary> summary = MergeTraces(inputs, output);
  if (!summary.ok()) {
    fmt::print(stderr, "spreplay merge: {}\n", summary.status());
    return 1;
  }
  fmt::print(stderr, "{}: {} of {} records kept{}\n", output, summary->records_written,
             summary->records_read,
             summary->damaged_regions ? fmt::format("; {} damaged region(s) in the inputs skipped",
                                                    summary->damaged_regions)
                                      : "");
  return 0;
}

}  // namespace spreplay
