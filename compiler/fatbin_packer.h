#pragma once
// Packs one kernel's SASS for several architectures and its PTX into a
// standard CUDA fatbin, which cuModuleLoadData accepts as it is.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace spreplay {

class FatbinPacker {
 public:
  static absl::StatusOr<FatbinPacker> Create(const std::string& cuda_root);

  // `cubins` by arch; `ptx` without a trailing NUL, targeting `ptx_arch`.
  absl::StatusOr<std::string> Pack(const std::map<uint32_t, std::string>& cubins,
                                   std::string_view ptx, uint32_t ptx_arch) const;

  // The tool by its content, for keys: "fatbinary <its SHA-256>".
  const std::string& identity() const { return identity_; }

 private:
  FatbinPacker(std::string fatbinary, std::string identity)
      : fatbinary_(std::move(fatbinary)), identity_(std::move(identity)) {}
  std::string fatbinary_;
  std::string identity_;
};

// The ".target sm_NN" a PTX module declares, or an error.
absl::StatusOr<uint32_t> PtxTargetArch(std::string_view ptx);

}  // namespace spreplay
