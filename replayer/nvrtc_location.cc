#include "replayer/nvrtc_location.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "replayer/pinned_library_loader.h"

namespace spreplay {
namespace {

// NVRTC's library in `directory`: libnvrtc.so as a toolkit installs it, else
// libnvrtc.so.<major> as NVIDIA's PyPI wheels do (not the ".alt" variant).
std::optional<std::filesystem::path> NvrtcLibrary(const std::filesystem::path& directory) {
  std::error_code error;
  if (std::filesystem::exists(directory / "libnvrtc.so", error)) return directory / "libnvrtc.so";
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("libnvrtc.so.")) return entry.path();
  }
  return std::nullopt;
}

// Loading NVRTC's builtins in `directory` by path makes NVRTC's own dlopen
// by file name find them in the process. OK when `directory` holds none:
// NVRTC then searches as usual.
absl::Status PreloadNvrtcBuiltins(const std::string& directory) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    const std::string name = entry.path().filename().string();
    // libnvrtc-builtins.so.<major>.<minor>, not the ".alt" variant.
    if (!name.starts_with("libnvrtc-builtins.so.")) continue;
    if (!dlopen(entry.path().c_str(), RTLD_NOW | RTLD_GLOBAL))
      return absl::FailedPreconditionError(
          fmt::format("cannot load NVRTC's builtins {}: {}", entry.path().string(), dlerror()));
  }
  return absl::OkStatus();
}

// The path to pass to IGlobalSession::setDownstreamCompilerPath for NVRTC.
// Slang dlopens that path after adding the platform's "lib" prefix and ".so"
// suffix to its file name, so it takes "<dir>/nvrtc", not the directory.
std::string NvrtcLibraryStem(const std::string& directory) {
  return (std::filesystem::path(directory) / "nvrtc").string();
}

}  // namespace

std::optional<std::string> DefaultNvrtcDirectory() {
  std::vector<std::filesystem::path> roots;
  if (const char* cuda_home = std::getenv("CUDA_HOME"); cuda_home && *cuda_home)
    roots.emplace_back(cuda_home);
  roots.emplace_back("/usr/local/cuda");
  for (const std::filesystem::path& root : roots) {
    // A toolkit's layout, then that of NVIDIA's PyPI wheels.
    for (const char* libraries : {"lib64", "lib"}) {
      if (NvrtcLibrary(root / libraries)) return (root / libraries).string();
    }
  }
  return std::nullopt;
}

absl::Status UseNvrtc(slang::IGlobalSession* session, const std::string& directory) {
  const std::optional<std::filesystem::path> library = NvrtcLibrary(directory);
  if (!library) return absl::NotFoundError(fmt::format("no libnvrtc.so in {}", directory));
  if (absl::Status status = PreloadNvrtcBuiltins(directory); !status.ok()) return status;
  const std::string stem = NvrtcLibraryStem(directory);
  if (library->filename() != "libnvrtc.so") {
    if (absl::Status status = PinSharedLibrary(session, stem, library->string()); !status.ok())
      return status;
  }
  session->setDownstreamCompilerPath(SLANG_PASS_THROUGH_NVRTC, stem.c_str());
  return absl::OkStatus();
}

std::string PointSlangAtCudaHeaders(const std::string& nvrtc_directory) {
  if (const char* cuda_path = std::getenv("CUDA_PATH"); cuda_path && *cuda_path) return cuda_path;
  if (nvrtc_directory.empty()) return "";
  std::error_code error;
  // Through the symbolic links a bundle of wheels may have made.
  const std::optional<std::filesystem::path> found = NvrtcLibrary(nvrtc_directory);
  if (!found) return "";
  const std::filesystem::path library = std::filesystem::canonical(*found, error);
  if (error) return "";
  const std::filesystem::path root = library.parent_path().parent_path();
  if (!std::filesystem::exists(root / "include" / "cuda_fp16.h", error)) return "";
  setenv("CUDA_PATH", root.c_str(), /*overwrite=*/1);  // unset or empty, checked above
  return root.string();
}

void KeepNvrtcOutOfComputeCache() {
  if (const char* disable = std::getenv("CUDA_CACHE_DISABLE"); disable && *disable) return;
  setenv("CUDA_CACHE_DISABLE", "1", /*overwrite=*/1);  // unset or empty, checked above
}

}  // namespace spreplay
