#include <charconv>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "archive/json_writer.h"
#include "cli/commands.h"
#include "common/fmt_absl.h"
#include "common/whole_file.h"
#include "compiler/compile_cache.h"
#include "compiler/compile_pipeline.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "replayer/nvrtc_location.h"
#include "replayer/recorded_working_directory.h"

namespace spreplay {
namespace {

constexpr std::string_view kUsage =
    "usage: spreplay compile TRACE... -o ARCHIVE [--arch 75,80,...] [--jobs N]\n"
    "                        [--cache DIR | --no-cache] [--cache-max-size SIZE]\n"
    "                        [--sass auto|nvjitlink|ptxas] [--report FILE.json] [--no-modules]\n"
    "                        [--programs-per-session N|all] [--shard K/N]\n";

template <typename Number>
bool ParseNumber(std::string_view text, Number& number) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  return error == std::errc() && end == text.data() + text.size();
}

std::vector<std::string_view> SplitCommas(std::string_view text) {
  std::vector<std::string_view> items;
  for (size_t start = 0; start <= text.size();) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) items.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return items;
}

// Per-kernel timings and sizes, for benchmarks and build dashboards.
std::string ReportJson(const CompileReport& report) {
  JsonWriter json(2);
  json.BeginObject();
  json.Key("sassTool").String(report.sass_tool);
  json.Key("archiveBytes").Uint(report.archive_bytes);
  json.Key("wallSeconds").Double(report.wall_seconds);
  json.Key("cpuSeconds").Double(report.cpu_seconds);
  json.Key("peakRssBytes").Uint(report.peak_rss_bytes);
  json.Key("criticalPathSeconds").Double(report.critical_path_seconds);
  json.Key("criticalPathKernel").String(report.critical_path_label);
  json.Key("appCompileSeconds").Double(report.app_compile_seconds);
  json.Key("appModuleLoadSeconds").Double(report.app_module_load_seconds);
  json.Key("modulesArchived").Uint(report.modules_archived);
  json.Key("modulesRefused").Uint(report.modules_refused);
  json.Key("moduleIrBytes").Uint(report.module_ir_bytes);
  json.Key("moduleSeconds").Double(report.module_seconds);
  json.Key("moduleSessions").Uint(report.module_groups);
  json.Key("moduleSessionsCached").Uint(report.module_groups_cached);
  json.Key("moduleSessionsWarm").Uint(report.module_groups_warm);
  json.Key("kernels").BeginArray();
  for (const KernelOutcome& kernel : report.kernels) {
    json.BeginObject();
    json.Key("key").String(kernel.key.ToHex());
    json.Key("label").String(kernel.label);
    json.Key("status").String(kernel.status == KernelOutcome::Status::kCompiled ? "compiled"
                                                                                : "failed");
    json.Key("message").String(kernel.message);
    json.Key("replayCached").Bool(kernel.replay_cached);
    json.Key("replayedOverIr").Bool(kernel.replayed_over_ir);
    json.Key("ptxRenamedRegisters").Uint(kernel.ptx_renamed_registers);
    json.Key("optix").Bool(kernel.optix);
    json.Key("frontEndSeconds").Double(kernel.front_end_seconds);
    json.Key("codegenSeconds").Double(kernel.codegen_seconds);
    json.Key("sassSeconds").BeginObject();
    for (const auto& [arch, seconds] : kernel.sass_seconds)
      json.Key(fmt::format("sm_{}", arch)).Double(seconds);
    json.EndObject();
    json.Key("recordedCompileSeconds").Double(kernel.recorded_compile_seconds);
    json.Key("ptxBytes").Uint(kernel.ptx_bytes);
    json.Key("fatbinBytes").Uint(kernel.fatbin_bytes);
    json.EndObject();
  }
  json.EndArray();
  json.Key("timeline").BeginArray();
  for (const TimelineSpan& span : report.timeline) {
    json.BeginObject();
    json.Key("stage").String(span.stage);
    json.Key("label").String(span.label);
    json.Key("worker").Uint(span.worker);
    json.Key("start").Double(span.start_seconds);
    json.Key("end").Double(span.end_seconds);
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
  return json.text() + "\n";
}

int UsageError(std::string_view message) {
  fmt::print(stderr, "spreplay compile: {}\n{}", message, kUsage);
  return 2;
}

}  // namespace

int RunCompile(std::span<char*> args) {
  // These change this process's environment, so they come first, before any
  // thread. Where getcwd() could not be answered, line information would name
  // this directory, which the PTX comparison accepts like other header paths.
  PointSlangAtCudaHeaders(DefaultNvrtcDirectory().value_or(""));
  KeepNvrtcOutOfComputeCache();
  TakeOverWorkingDirectoryForNvrtc();
  std::vector<std::string> traces;
  std::string output;
  std::string report_path;
  CompileOptions options;
  options.cache_directory = DefaultCacheDirectory();
  // From the environment, then from the command line: why not, or "".
  auto set_cache_max_size = [&](std::string_view source, std::string_view text) -> std::string {
    absl::StatusOr<uint64_t> bytes = ParseCacheSize(text);
    if (!bytes.ok()) return fmt::format("{}: {}", source, bytes.status().message());
    options.cache_max_bytes = *bytes;
    return "";
  };
  if (const char* size = std::getenv("SPREPLAY_CACHE_MAX_SIZE"); size && *size) {
    if (std::string error = set_cache_max_size("SPREPLAY_CACHE_MAX_SIZE", size); !error.empty())
      return UsageError(error);
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    auto value = [&]() -> std::string_view {
      return i + 1 < args.size() ? std::string_view(args[++i]) : "";
    };
    if (arg == "-o" || arg == "--output") {
      output = value();
    } else if (arg == "--arch") {
      options.arches.clear();
      for (std::string_view item : SplitCommas(value())) {
        if (item.starts_with("sm_")) item.remove_prefix(3);
        uint32_t arch = 0;
        if (!ParseNumber(item, arch) || arch < 50)
          return UsageError(fmt::format("bad arch '{}'", item));
        options.arches.push_back(arch);
      }
    } else if (arg == "--jobs" || arg == "-j") {
      if (!ParseNumber(value(), options.jobs) || options.jobs < 1)
        return UsageError("--jobs needs a positive number");
    } else if (arg == "--cache") {
      options.cache_directory = value();
    } else if (arg == "--no-cache") {
      options.cache_directory.clear();
    } else if (arg == "--cache-max-size") {
      if (std::string error = set_cache_max_size(arg, value()); !error.empty())
        return UsageError(error);
    } else if (arg == "--shard") {
      // K/N, K counted from 1 as CI matrices count.
      const std::string_view text = value();
      const size_t slash = text.find('/');
      uint32_t index = 0, count = 0;
      if (slash == std::string_view::npos || !ParseNumber(text.substr(0, slash), index) ||
          !ParseNumber(text.substr(slash + 1), count) || count < 1 || index < 1 || index > count)
        return UsageError("--shard needs K/N with 1 <= K <= N, e.g. --shard 2/4");
      options.shard_index = index - 1;
      options.shard_count = count;
    } else if (arg == "--no-modules") {
      options.modules = false;
    } else if (arg == "--programs-per-session") {
      const std::string_view text = value();
      if (text == "all")
        options.programs_per_session = std::numeric_limits<size_t>::max();
      else if (!ParseNumber(text, options.programs_per_session) || options.programs_per_session < 1)
        return UsageError("--programs-per-session needs a positive number, or all");
    } else if (arg == "--report") {
      report_path = value();
    } else if (arg == "--sass") {
      options.sass_backend = value();
      if (options.sass_backend != "ptxas" && options.sass_backend != "nvjitlink" &&
          options.sass_backend != "auto")
        return UsageError("--sass is auto, nvjitlink or ptxas");
    } else if (arg.starts_with("-")) {
      return UsageError(fmt::format("unknown option {}", arg));
    } else {
      traces.emplace_back(arg);
    }
  }
  if (traces.empty() || output.empty())
    return UsageError("needs at least one trace and -o ARCHIVE");
  if (options.arches.empty()) return UsageError("--arch needs at least one architecture");

  absl::StatusOr<Trace> trace = Trace::ReadAll(traces);
  if (!trace.ok()) {
    fmt::print(stderr, "spreplay compile: {}\n", trace.status());
    return 1;
  }
  if (!trace->damage().empty()) {
    fmt::print(stderr,
               "spreplay compile: warning: {} damaged region(s) in the trace skipped; first: {}\n",
               trace->damage().size(), trace->damage().front().reason);
  }
  size_t done = 0;
  const size_t total = KernelsOfShard(*trace, options).size();
  options.progress = [&](const std::string& line) {
    fmt::print(stderr, "[{}/{}] {}\n", ++done, total, line);
  };
  options.notice = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  absl::StatusOr<CompileReport> report = CompileTrace(*trace, output, options);
  if (!report.ok()) {
    fmt::print(stderr, "spreplay compile: {}\n", report.status());
    return 1;
  }
  if (!report_path.empty()) {
    if (absl::Status written = WriteFile(report_path, ReportJson(*report)); !written.ok())
      fmt::print(stderr, "spreplay compile: {}\n", written);
  }
  const size_t failed = report->failed();
  const size_t compiled = std::count_if(
      report->kernels.begin(), report->kernels.end(),
      [](const KernelOutcome& k) { return k.status == KernelOutcome::Status::kCompiled; });
  const std::string shard =
      options.shard_count > 1
          ? fmt::format(" (shard {} of {})", options.shard_index + 1, options.shard_count)
          : "";
  fmt::print(stderr, "{}: {} kernel(s){} for sm_{} with {}, {} bytes, in {:.1f} s{}\n", output,
             compiled, shard, fmt::join(options.arches, ",sm_"), report->sass_tool,
             report->archive_bytes, report->wall_seconds,
             failed ? fmt::format("; {} FAILED (see above)", failed) : "");
  // What the compile cost against what it saves the app: the wall time
  // against the slowest kernel's chain, and the CPU time against the app's.
  const std::string app_jit =
      report->app_module_load_seconds > 0
          ? fmt::format("{:.1f} s ({:.1f} s loading modules, {:.1f} s generating code)",
                        report->app_module_load_seconds + report->app_compile_seconds,
                        report->app_module_load_seconds, report->app_compile_seconds)
          : fmt::format("{:.1f} s generating code (the traces hold no module load times)",
                        report->app_compile_seconds);
  fmt::print(stderr,
             "{}: {:.1f} s wall, {:.1f} s CPU, peak RSS {:.2f} GB in one process; critical path "
             "{:.1f} s ({}); the app's own JIT of these kernels took {}\n",
             output, report->wall_seconds, report->cpu_seconds, report->peak_rss_bytes / 1e9,
             report->critical_path_seconds,
             report->critical_path_label.empty() ? "no kernel" : report->critical_path_label,
             app_jit);
  if (options.modules) {
    fmt::print(stderr,
               "{}: {} module(s) as verified IR, {:.1f} MB ({:.1f} s of serializing and rebuilding "
               "over IR, over all jobs); {} of {} session configuration(s) unchanged, from the "
               "cache{}\n",
               output, report->modules_archived, report->module_ir_bytes / 1e6,
               report->module_seconds, report->module_groups_cached, report->module_groups,
               report->modules_refused
                   ? fmt::format("; {} not archived (see above)", report->modules_refused)
                   : "");
  }
  return failed ? 1 : 0;
}

}  // namespace spreplay
