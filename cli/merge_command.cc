#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "common/fmt_absl.h"
#include "fmt/format.h"
#include "recorder/trace_merge.h"

namespace spreplay {

int RunMerge(std::span<char*> args) {
  std::vector<std::string> inputs;
  std::string output;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if ((arg == "-o" || arg == "--output") && i + 1 < args.size()) {
      output = args[++i];
    } else if (arg.starts_with("-")) {
      fmt::print(stderr, "usage: spreplay merge TRACE... -o OUT\n");
      return 2;
    } else {
      inputs.emplace_back(arg);
    }
  }
  if (inputs.empty() || output.empty()) {
    fmt::print(stderr, "usage: spreplay merge TRACE... -o OUT\n");
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
