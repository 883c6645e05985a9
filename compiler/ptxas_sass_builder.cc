#include <cstdlib>
#include <filesystem>

#include "common/fmt_absl.h"
#include "common/whole_file.h"
#include "compiler/sass_builder.h"
#include "compiler/scratch_dir.h"
#include "compiler/subprocess.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

class PtxasBuilder final : public SassBuilder {
 public:
  PtxasBuilder(std::string ptxas, std::string identity)
      : ptxas_(std::move(ptxas)), identity_(std::move(identity)) {}

  absl::StatusOr<std::string> Build(std::string_view ptx, uint32_t arch) const override {
    absl::StatusOr<ScratchDir> scratch = ScratchDir::Create("spreplay-ptxas-");
    if (!scratch.ok()) return scratch.status();
    const std::string input = scratch->File("kernel.ptx");
    const std::string output = scratch->File("kernel.cubin");
    if (absl::Status status = WriteFile(input, ptx); !status.ok()) return status;
    // The driver JIT's defaults (-O3), so SASS built here is what the driver
    // would have built from the same PTX.
    absl::StatusOr<ProcessResult> run =
        RunProcess({ptxas_, fmt::format("-arch=sm_{}", arch), input, "-o", output});
    if (!run.ok()) return run.status();
    if (run->exit_code != 0) {
      return absl::InternalError(fmt::format("ptxas -arch=sm_{} failed (exit {}):\n{}", arch,
                                             run->exit_code, run->output));
    }
    return ReadFile(output);
  }

  const std::string& identity() const override { return identity_; }

 private:
  std::string ptxas_;
  std::string identity_;
};

}  // namespace

std::string FindCudaRoot() {
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    const char* value = std::getenv(variable);
    if (value && std::filesystem::exists(std::filesystem::path(value) / "bin" / "ptxas"))
      return value;
  }
  return "/usr/local/cuda";
}

absl::StatusOr<std::unique_ptr<SassBuilder>> MakePtxasBuilder(const std::string& cuda_root) {
  const std::string ptxas = (std::filesystem::path(cuda_root) / "bin" / "ptxas").string();
  absl::StatusOr<ProcessResult> version = RunProcess({ptxas, "--version"});
  if (!version.ok() || version->exit_code != 0) {
    return absl::NotFoundError(fmt::format("{} was not found or does not run", ptxas));
  }
  // The last line names the exact build, e.g. "Build cuda_13.0.r13.0/compiler.36424714_0".
  std::string identity = version->output;
  while (!identity.empty() && identity.back() == '\n') identity.pop_back();
  identity = "ptxas " + identity.substr(identity.rfind('\n') + 1);
  return std::unique_ptr<SassBuilder>(new PtxasBuilder(ptxas, identity));
}

}  // namespace spreplay
