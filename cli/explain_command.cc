// `spreplay explain TRACE ARCHIVE`: for every kernel of a trace (the misses
// an app recorded with SLANGPY_KERNELS_MISSES, or any trace), whether the
// archive serves it and, if not, why: with the reasons the runtime gives,
// on any machine, without the app or a GPU.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "archive/archive.h"
#include "cli/commands.h"
#include "common/fmt_absl.h"
#include "fmt/format.h"
#include "recorder/trace_reader.h"
#include "runtime/miss_explanation.h"

namespace spreplay {
namespace {

constexpr std::string_view kUsage = "usage: spreplay explain TRACE ARCHIVE\n";

std::optional<CallSiteName> NameOf(const Trace& trace, const KernelRecord& kernel) {
  std::vector<trace_schema::CallSite::Reader> call_sites = trace.CallSitesOf(kernel);
  if (call_sites.empty()) return std::nullopt;
  return CallSiteName{call_sites.front().getModule(), call_sites.front().getFunction(),
                      CallKindName(call_sites.front().getKind())};
}

// The request the app's process made for `kernel`, rebuilt from the trace.
absl::StatusOr<KernelRequest> RequestOf(const Trace& trace, const KernelRecord& kernel) {
  absl::StatusOr<ComponentPtr> program = trace.FindComponent(kernel.program);
  if (!program.ok()) return program.status();
  absl::StatusOr<SessionConfig> config = trace.FindSession(kernel.session_location);
  if (!config.ok()) return config.status();
  auto session = std::make_shared<SessionInfo>();
  session->config = *std::move(config);
  session->digest = kernel.session;
  KernelRequest request;
  request.program = *std::move(program);
  request.session = std::move(session);
  request.key = kernel.key;
  request.entry_point_index = kernel.entry_point_index;
  request.target_index = kernel.target_index;
  request.toolchain = kernel.toolchain;
  return request;
}

// Why `archive` does not serve `kernel`; "" if it does.
std::string WhyNotServed(const Trace& trace, const Archive& archive, const KernelRecord& kernel) {
  const std::string archived_toolchain = archive.index().getToolchain();
  if (kernel.toolchain != archived_toolchain) {
    return fmt::format("the archive was built for {}, the kernel recorded with {}",
                       archived_toolchain, kernel.toolchain);
  }
  if (archive.Find(kernel.key)) return "";
  if (std::optional<std::string> unbuilt = UnbuiltReason(archive, kernel.key)) return *unbuilt;
  absl::StatusOr<KernelRequest> request = RequestOf(trace, kernel);
  if (!request.ok()) return fmt::format("the trace cannot describe it: {}", request.status());
  const std::optional<CallSiteName> name = NameOf(trace, kernel);
  return ExplainMiss(archive, *request, name ? &*name : nullptr);
}

}  // namespace

int RunExplain(std::span<char*> args) {
  if (args.size() != 2 || std::string_view(args[0]).starts_with("-")) {
    fmt::print(stderr, "{}", kUsage);
    return 2;
  }
  absl::StatusOr<Trace> trace = Trace::Read(args[0]);
  if (!trace.ok()) {
    fmt::print(stderr, "spreplay: {}\n", trace.status());
    return 1;
  }
  absl::StatusOr<Archive> archive = Archive::Open(args[1]);
  if (!archive.ok()) {
    fmt::print(stderr, "spreplay: {}\n", archive.status());
    return 1;
  }
  size_t missed = 0;
  for (const KernelRecord& kernel : trace->kernels()) {
    const std::optional<CallSiteName> name = NameOf(*trace, kernel);
    const std::string label = name ? name->Label()
                                   : fmt::format("kernel {} ({})", kernel.key.ToHex().substr(0, 16),
                                                 kernel.entry_point_name);
    const std::string reason = WhyNotServed(*trace, *archive, kernel);
    missed += !reason.empty();
    if (reason.empty()) {
      fmt::print("served  {}\n", label);
    } else {
      fmt::print("missed  {}: {}\n", label, reason);
    }
  }
  fmt::print("{} of {} kernel(s) of {} are served by {}\n", trace->kernels().size() - missed,
             trace->kernels().size(), trace->name(), archive->source_name());
  return missed == 0 ? 0 : 1;
}

}  // namespace spreplay
