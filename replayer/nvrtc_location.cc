#include "replayer/nvrtc_location.h"

#include <cstdlib>
#include <filesystem>

#include "fmt/format.h"

namespace spreplay {
namespace {

bool HoldsNvrtc(const std::filesystem::path& directory) {
  std::error_code error;
  return std::filesystem::exists(directory / "libnvrtc.so", error);
}

}  // namespace

std::optional<std::string> DefaultNvrtcDirectory() {
  if (const char* cuda_home = std::getenv("CUDA_HOME"); cuda_home && *cuda_home) {
    const std::filesystem::path directory = std::filesystem::path(cuda_home) / "lib64";
    if (HoldsNvrtc(directory)) return directory.string();
  }
  const std::filesystem::path fallback = "/usr/local/cuda/lib64";
  if (HoldsNvrtc(fallback)) return fallback.string();
  return std::nullopt;
}

absl::StatusOr<std::string> NvrtcLibraryStem(const std::string& directory) {
  if (!HoldsNvrtc(directory))
    return absl::NotFoundError(fmt::format("no libnvrtc.so in {}", directory));
  return (std::filesystem::path(directory) / "nvrtc").string();
}

}  // namespace spreplay
