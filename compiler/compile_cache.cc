#include "compiler/compile_cache.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "fmt/format.h"

namespace spreplay {

std::string DefaultCacheDirectory() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/spreplay";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/spreplay";
  return "";
}

std::string CompileCache::PathOf(const Digest& name) const {
  const std::string hex = name.ToHex();
  return fmt::format("{}/v1/{}/{}", directory_, hex.substr(0, 2), hex);
}

std::optional<std::string> CompileCache::Get(const Digest& name) const {
  if (!enabled()) return std::nullopt;
  std::ifstream file(PathOf(name), std::ios::binary);
  if (!file) return std::nullopt;
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

}  // namespace spreplay
