#include "compiler/compile_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "fmt/format.h"

namespace spreplay {

std::string DefaultCacheDirectory() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/spreplay";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/spreplay";
  return "";
}

absl::StatusOr<uint64_t> ParseCacheSize(const std::string_view given) {
  static constexpr std::string_view kUnits = "KMGT";
  std::string_view text = given;
  int shift = 0;
  if (!text.empty()) {
    const size_t unit = kUnits.find(static_cast<char>(std::toupper(text.back())));
    if (unit != std::string_view::npos) {
      shift = 10 * static_cast<int>(unit + 1);
      text.remove_suffix(1);
    }
  }
  uint64_t number = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() ||
      number > (UINT64_MAX >> shift))
    return absl::InvalidArgumentError(fmt::format(
        "'{}' is not a size: give bytes, or a number with K, M, G or T after it", given));
  return number << shift;
}

namespace {

constexpr std::string_view kEntriesFolder = "v1";

// Where CompileCache::WriteTemporary writes before it publishes.
bool IsTemporary(const std::filesystem::path& path) {
  return path.filename().string().find(".tmp.") != std::string::npos;
}

}  // namespace

std::string CompileCache::PathOf(const Digest& name) const {
  const std::string hex = name.ToHex();
  return fmt::format("{}/{}/{}/{}", directory_, kEntriesFolder, hex.substr(0, 2), hex);
}

std::optional<std::string> CompileCache::Get(const Digest& name) const {
  if (!enabled()) return std::nullopt;
  const std::string path = PathOf(name);
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::nullopt;
  // Its modification time says when it was last used, for Trim; a cache
  // this process may not write to is read all the same.
  std::error_code ignored;
  std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now(), ignored);
  std::ostringstream buffer;
  buffer << file.rdbuf();
  std::string stored = std::move(buffer).str();
  Digest recorded;
  if (stored.size() < recorded.bytes.size()) return std::nullopt;
  std::copy(stored.begin(), stored.begin() + recorded.bytes.size(), recorded.bytes.begin());
  std::string bytes = stored.substr(recorded.bytes.size());
  if (Sha256Of(bytes) != recorded) return std::nullopt;  // damaged: rebuild it
  return bytes;
}

absl::StatusOr<std::string> CompileCache::WriteTemporary(const Digest& name,
                                                         std::string_view bytes) const {
  const std::string path = PathOf(name);
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
  if (error)
    return absl::InternalError(
        fmt::format("cannot create the compile cache at {}: {}", directory_, error.message()));
  const std::string temporary = fmt::format("{}.tmp.{}.{}", path, getpid(), std::random_device{}());
  std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
  const Digest digest = Sha256Of(bytes);
  file.write(reinterpret_cast<const char*>(digest.bytes.data()), digest.bytes.size());
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file) {
    std::filesystem::remove(temporary, error);
    return absl::InternalError(fmt::format("cannot write to the compile cache at {}", directory_));
  }
  return temporary;
}

absl::Status CompileCache::Put(const Digest& name, std::string_view bytes) const {
  if (!enabled()) return absl::OkStatus();
  absl::StatusOr<std::string> temporary = WriteTemporary(name, bytes);
  if (!temporary.ok()) return temporary.status();
  const std::string path = PathOf(name);
  std::error_code error;
  std::filesystem::rename(*temporary, path, error);
  if (error) {
    std::filesystem::remove(*temporary, error);
    return absl::InternalError(fmt::format("cannot publish {} in the compile cache", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> CompileCache::PutFirst(const Digest& name,
                                                   std::string_view bytes) const {
  if (!enabled()) return std::string(bytes);
  absl::StatusOr<std::string> temporary = WriteTemporary(name, bytes);
  if (!temporary.ok()) return temporary.status();
  // A hard link publishes atomically and fails if the name exists: the first
  // writer's entry stays, and every later one reads it back.
  std::error_code error;
  std::filesystem::create_hard_link(*temporary, PathOf(name), error);
  std::error_code ignored;
  std::filesystem::remove(*temporary, ignored);
  if (!error) return std::string(bytes);
  if (std::optional<std::string> first = Get(name)) return *std::move(first);
  // A damaged entry: replace it.
  if (absl::Status replaced = Put(name, bytes); !replaced.ok()) return replaced;
  return std::string(bytes);
}

absl::StatusOr<CompileCache::TrimOutcome> CompileCache::Trim(
    uint64_t max_bytes, std::chrono::seconds abandoned_after) const {
  TrimOutcome outcome;
  if (!enabled()) return outcome;
  namespace fs = std::filesystem;
  struct Entry {
    fs::file_time_type used;
    uint64_t bytes;
    fs::path path;
  };
  std::vector<Entry> entries;
  const fs::file_time_type now = fs::file_time_type::clock::now();
  std::error_code error;
  fs::recursive_directory_iterator it(fs::path(directory_) / kEntriesFolder, error);
  if (error == std::errc::no_such_file_or_directory) return outcome;
  if (error)
    return absl::InternalError(
        fmt::format("cannot list the compile cache at {}: {}", directory_, error.message()));
  // Entries another compile removes meanwhile are skipped, not errors.
  for (; it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (error) break;
    std::error_code gone;
    if (!it->is_regular_file(gone)) continue;
    const uint64_t bytes = it->file_size(gone);
    const fs::file_time_type used = it->last_write_time(gone);
    if (gone) continue;
    // A write in progress is not an entry yet; one older than that never will be.
    if (IsTemporary(it->path())) {
      if (now - used > abandoned_after) fs::remove(it->path(), gone);
      continue;
    }
    outcome.bytes_before += bytes;
    entries.push_back({used, bytes, it->path()});
  }
  if (error)
    return absl::InternalError(
        fmt::format("cannot list the compile cache at {}: {}", directory_, error.message()));
  outcome.bytes_after = outcome.bytes_before;
  if (max_bytes == 0 || outcome.bytes_before <= max_bytes) return outcome;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& entry : entries) {
    if (outcome.bytes_after <= max_bytes) break;
    std::error_code gone;
    fs::remove(entry.path, gone);
    // Removed here or by another compile: either way it no longer counts.
    outcome.bytes_after -= entry.bytes;
    if (!gone) ++outcome.entries_removed;
  }
  return outcome;
}

}  // namespace spreplay
