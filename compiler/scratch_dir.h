#pragma once
// A private temporary directory, removed with everything in it on destruction.

#include <string>

#include "absl/status/statusor.h"

namespace spreplay {

class ScratchDir {
 public:
  static absl::StatusOr<ScratchDir> Create(const std::string& prefix);
  ScratchDir(ScratchDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  ScratchDir& operator=(ScratchDir&&) = delete;
  ~ScratchDir();

  std::string File(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace spreplay
