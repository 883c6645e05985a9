#include "runtime/cuda_arch.h"

#include <dlfcn.h>

#include <algorithm>

#include "fmt/format.h"

namespace spreplay {
namespace {

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
constexpr int kComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kComputeCapabilityMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

struct DriverApi {
  CUresult (*ctx_get_current)(CUcontext*) = nullptr;
  CUresult (*ctx_get_device)(CUdevice*) = nullptr;
  CUresult (*device_get_count)(int*) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_get_attribute)(int*, int, CUdevice) = nullptr;
};

absl::StatusOr<DriverApi> LoadedDriver() {
  // RTLD_NOLOAD: slang-rhi has loaded the driver by the time a kernel is
  // requested; if it has not, there is no CUDA device to serve.
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!handle) return absl::UnavailableError("the CUDA driver is not loaded in this process");
  DriverApi api;
  api.ctx_get_current =
      reinterpret_cast<decltype(api.ctx_get_current)>(dlsym(handle, "cuCtxGetCurrent"));
  api.ctx_get_device =
      reinterpret_cast<decltype(api.ctx_get_device)>(dlsym(handle, "cuCtxGetDevice"));
  api.device_get_count =
      reinterpret_cast<decltype(api.device_get_count)>(dlsym(handle, "cuDeviceGetCount"));
  api.device_get = reinterpret_cast<decltype(api.device_get)>(dlsym(handle, "cuDeviceGet"));
  api.device_get_attribute =
      reinterpret_cast<decltype(api.device_get_attribute)>(dlsym(handle, "cuDeviceGetAttribute"));
  if (!api.ctx_get_current || !api.ctx_get_device || !api.device_get_count || !api.device_get ||
      !api.device_get_attribute) {
    return absl::UnavailableError("the CUDA driver lacks the device query functions");
  }
  return api;
}

absl::StatusOr<uint32_t> ArchOf(const DriverApi& api, CUdevice device) {
  int major = 0, minor = 0;
  if (api.device_get_attribute(&major, kComputeCapabilityMajor, device) != 0 ||
      api.device_get_attribute(&minor, kComputeCapabilityMinor, device) != 0) {
    return absl::UnavailableError(
        fmt::format("cannot read the compute capability of CUDA device {}", device));
  }
  return static_cast<uint32_t>(major * 10 + minor);
}

}  // namespace

absl::StatusOr<std::vector<uint32_t>> ArchesToServe() {
  absl::StatusOr<DriverApi> api = LoadedDriver();
  if (!api.ok()) return api.status();
  CUcontext context = nullptr;
  CUdevice device = 0;
  if (api->ctx_get_current(&context) == 0 && context && api->ctx_get_device(&device) == 0) {
    absl::StatusOr<uint32_t> arch = ArchOf(*api, device);
    if (!arch.ok()) return arch.status();
    return std::vector<uint32_t>{*arch};
  }
  int count = 0;
  if (api->device_get_count(&count) != 0 || count <= 0)
    return absl::UnavailableError("no CUDA device is visible");
  std::vector<uint32_t> arches;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    if (api->device_get(&device, ordinal) != 0) continue;
    absl::StatusOr<uint32_t> arch = ArchOf(*api, device);
    if (!arch.ok()) return arch.status();
    if (std::find(arches.begin(), arches.end(), *arch) == arches.end()) arches.push_back(*arch);
  }
  return arches;
}

}  // namespace spreplay
