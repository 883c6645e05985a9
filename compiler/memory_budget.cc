#include "compiler/memory_budget.h"

#include <algorithm>
#include <charconv>
#include <string>

#include "common/whole_file.h"

namespace spreplay {
namespace {

std::optional<uint64_t> NumberAt(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  return value;
}

// The cgroup (v2) directory of this process, from /proc/self/cgroup's
// "0::PATH" line, under the unified hierarchy's mount point.
std::optional<std::string> CgroupV2Directory() {
  absl::StatusOr<std::string> cgroups = ReadFile("/proc/self/cgroup");
  if (!cgroups.ok()) return std::nullopt;
  std::string_view lines = *cgroups;
  while (!lines.empty()) {
    const size_t end = std::min(lines.find('\n'), lines.size());
    const std::string_view line = lines.substr(0, end);
    lines.remove_prefix(std::min(end + 1, lines.size()));
    if (line.starts_with("0::")) return "/sys/fs/cgroup" + std::string(line.substr(3));
  }
  return std::nullopt;
}

std::optional<uint64_t> HeadroomOf(const std::string& limit_file, const std::string& usage_file) {
  absl::StatusOr<std::string> limit = ReadFile(limit_file);
  absl::StatusOr<std::string> usage = ReadFile(usage_file);
  if (!limit.ok() || !usage.ok()) return std::nullopt;
  return CgroupHeadroom(*limit, *usage);
}

}  // namespace

std::optional<uint64_t> MemAvailableOf(std::string_view meminfo) {
  constexpr std::string_view kField = "MemAvailable:";
  const size_t at = meminfo.find(kField);
  if (at == std::string_view::npos) return std::nullopt;
  std::optional<uint64_t> kilobytes = NumberAt(meminfo.substr(at + kField.size()));
  if (!kilobytes) return std::nullopt;
  return *kilobytes * 1024;
}

std::optional<uint64_t> CgroupHeadroom(std::string_view limit, std::string_view usage) {
  // cgroup v1 says "no limit" with the largest page-aligned signed 64-bit value.
  constexpr uint64_t kNoLimitV1 = uint64_t{0x7FFFFFFFFFFFF000};
  std::optional<uint64_t> most = NumberAt(limit);
  std::optional<uint64_t> used = NumberAt(usage);
  if (!most || !used || *most >= kNoLimitV1) return std::nullopt;
  return *most > *used ? *most - *used : 0;
}

std::optional<uint64_t> AvailableMemoryBytes() {
  std::optional<uint64_t> available;
  if (absl::StatusOr<std::string> meminfo = ReadFile("/proc/meminfo"); meminfo.ok())
    available = MemAvailableOf(*meminfo);
  std::optional<uint64_t> headroom;
  if (std::optional<std::string> directory = CgroupV2Directory())
    headroom = HeadroomOf(*directory + "/memory.max", *directory + "/memory.current");
  if (!headroom)
    headroom = HeadroomOf("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                          "/sys/fs/cgroup/memory/memory.usage_in_bytes");
  if (available && headroom) return std::min(*available, *headroom);
  return available ? available : headroom;
}

size_t SlangSessionsAtOnce(size_t workers, std::optional<uint64_t> available) {
  workers = std::max<size_t>(workers, 1);
  if (!available) return workers;
  return std::clamp<size_t>(*available / kBytesPerSlangSession, 1, workers);
}

size_t SessionsBeside(size_t sessions, std::optional<uint64_t> available) {
  // Never negative: SlangSessionsAtOnce grows with the sessions asked for.
  return SlangSessionsAtOnce(2 * sessions, available) - SlangSessionsAtOnce(sessions, available);
}

}  // namespace spreplay
