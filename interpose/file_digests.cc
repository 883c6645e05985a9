#include "interpose/file_digests.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/fmt_absl.h"
#include "fmt/format.h"

namespace spreplay {

absl::StatusOr<FileContent> FileDigests::Read(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0)
    return absl::NotFoundError(fmt::format("{}: {}", path, std::strerror(errno)));
  const Stamp stamp{static_cast<uint64_t>(info.st_dev), static_cast<uint64_t>(info.st_ino),
                    static_cast<uint64_t>(info.st_size),
                    int64_t(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec};
  {
    std::lock_guard lock(mutex_);
    auto it = memo_.find(path);
    if (it != memo_.end() && it->second.first == stamp) return it->second.second;
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(fmt::format("{}: cannot open", path));
  std::ostringstream buffer;
  buffer << file.rdbuf();
  auto bytes = std::make_shared<const std::string>(std::move(buffer).str());
  FileContent content{Sha256Of(*bytes), bytes};
  std::lock_guard lock(mutex_);
  memo_[path] = {stamp, content};
  return content;
}

}  // namespace spreplay
