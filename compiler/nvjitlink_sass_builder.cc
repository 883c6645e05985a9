#include <dlfcn.h>

#include <filesystem>
#include <vector>

#include "compiler/sass_builder.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

// The subset of nvJitLink.h we use, declared here so the compiler builds
// without the header and loads the library only when this backend is chosen.
using nvJitLinkHandle = void*;
using nvJitLinkResult = int;
constexpr int kInputPtx = 2;  // NVJITLINK_INPUT_PTX

struct NvJitLinkApi {
  nvJitLinkResult (*create)(nvJitLinkHandle*, uint32_t, const char**);
  nvJitLinkResult (*destroy)(nvJitLinkHandle*);
  nvJitLinkResult (*add_data)(nvJitLinkHandle, int, const void*, size_t, const char*);
  nvJitLinkResult (*complete)(nvJitLinkHandle);
  nvJitLinkResult (*get_cubin_size)(nvJitLinkHandle, size_t*);
  nvJitLinkResult (*get_cubin)(nvJitLinkHandle, void*);
  nvJitLinkResult (*get_error_log_size)(nvJitLinkHandle, size_t*);
  nvJitLinkResult (*get_error_log)(nvJitLinkHandle, char*);
  nvJitLinkResult (*version)(unsigned int*, unsigned int*);
};

class NvJitLinkBuilder final : public SassBuilder {
 public:
  NvJitLinkBuilder(NvJitLinkApi api, std::string identity)
      : api_(api), identity_(std::move(identity)) {}

  absl::StatusOr<std::string> Build(std::string_view ptx, uint32_t arch) const override {
    const std::string arch_option = fmt::format("-arch=sm_{}", arch);
    const char* options[] = {arch_option.c_str(), "-O3"};
    nvJitLinkHandle handle = nullptr;
    if (api_.create(&handle, 2, options) != 0)
      return absl::InternalError(fmt::format("nvJitLinkCreate failed for sm_{}", arch));
    std::string error;
    if (api_.add_data(handle, kInputPtx, ptx.data(), ptx.size(), "kernel.ptx") != 0 ||
        api_.complete(handle) != 0) {
      size_t size = 0;
      api_.get_error_log_size(handle, &size);
      std::string log(size, '\0');
      if (size) api_.get_error_log(handle, log.data());
      api_.destroy(&handle);
      return absl::InternalError(fmt::format("nvJitLink failed for sm_{}:\n{}", arch, log));
    }
    size_t size = 0;
    api_.get_cubin_size(handle, &size);
    std::string cubin(size, '\0');
    api_.get_cubin(handle, cubin.data());
    api_.destroy(&handle);
    return cubin;
  }

  const std::string& identity() const override { return identity_; }

 private:
  NvJitLinkApi api_;
  std::string identity_;
};

template <typename Fn>
bool Resolve(void* library, const char* name, Fn& function) {
  function = reinterpret_cast<Fn>(dlsym(library, name));
  return function != nullptr;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SassBuilder>> MakeNvJitLinkBuilder(const std::string& cuda_root) {
  std::string path;
  // A toolkit's layout, then that of NVIDIA's PyPI wheels.
  for (const char* libraries : {"lib64", "lib"}) {
    for (const char* name : {"libnvJitLink.so", "libnvJitLink.so.13"}) {
      const std::filesystem::path candidate = std::filesystem::path(cuda_root) / libraries / name;
      if (path.empty() && std::filesystem::exists(candidate)) path = candidate.string();
    }
  }
  void* library = path.empty() ? nullptr : dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    return absl::NotFoundError(
        fmt::format("libnvJitLink not found under {}/lib64 or {}/lib", cuda_root, cuda_root));
  }
  NvJitLinkApi api{};
  const bool complete =
      Resolve(library, "__nvJitLinkCreate_13_0", api.create) &&
      Resolve(library, "__nvJitLinkDestroy_13_0", api.destroy) &&
      Resolve(library, "__nvJitLinkAddData_13_0", api.add_data) &&
      Resolve(library, "__nvJitLinkComplete_13_0", api.complete) &&
      Resolve(library, "__nvJitLinkGetLinkedCubinSize_13_0", api.get_cubin_size) &&
      Resolve(library, "__nvJitLinkGetLinkedCubin_13_0", api.get_cubin) &&
      Resolve(library, "__nvJitLinkGetErrorLogSize_13_0", api.get_error_log_size) &&
      Resolve(library, "__nvJitLinkGetErrorLog_13_0", api.get_error_log) &&
      Resolve(library, "nvJitLinkVersion", api.version);
  if (!complete)
    return absl::NotFoundError(fmt::format("{} lacks the nvJitLink 13.0 entry points", path));
  unsigned major = 0, minor = 0;
  api.version(&major, &minor);
  return std::unique_ptr<SassBuilder>(
      new NvJitLinkBuilder(api, fmt::format("nvJitLink {}.{}", major, minor)));
}

}  // namespace spreplay
