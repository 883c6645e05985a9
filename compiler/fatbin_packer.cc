#include "compiler/fatbin_packer.h"

#include <filesystem>

#include "common/sha256.h"
#include "common/whole_file.h"
#include "compiler/scratch_dir.h"
#include "compiler/subprocess.h"
#include "fmt/format.h"

namespace spreplay {

absl::StatusOr<FatbinPacker> FatbinPacker::Create(const std::string& cuda_root) {
  const std::string fatbinary = (std::filesystem::path(cuda_root) / "bin" / "fatbinary").string();
  if (!std::filesystem::exists(fatbinary)) {
    return absl::NotFoundError(fmt::format(
        "fatbinary not found at {}: install the CUDA toolkit or point CUDA_HOME at it", fatbinary));
  }
  absl::StatusOr<std::string> tool = ReadFile(fatbinary);
  if (!tool.ok()) return tool.status();
  return FatbinPacker(fatbinary, "fatbinary " + Sha256Of(*tool).ToHex());
}

absl::StatusOr<std::string> FatbinPacker::Pack(const std::map<uint32_t, std::string>& cubins,
                                               std::string_view ptx, uint32_t ptx_arch) const {
  absl::StatusOr<ScratchDir> scratch = ScratchDir::Create("spreplay-fatbin-");
  if (!scratch.ok()) return scratch.status();
  std::vector<std::string> argv{fatbinary_, "--64", "--create=" + scratch->File("kernel.fatbin")};
  for (const auto& [arch, cubin] : cubins) {
    const std::string file = scratch->File(fmt::format("sm_{}.cubin", arch));
    if (absl::Status status = WriteFile(file, cubin); !status.ok()) return status;
    argv.push_back(fmt::format("--image3=kind=elf,sm={},file={}", arch, file));
  }
  const std::string ptx_file = scratch->File("kernel.ptx");
  if (absl::Status status = WriteFile(ptx_file, ptx); !status.ok()) return status;
  argv.push_back(fmt::format("--image3=kind=ptx,sm={},file={}", ptx_arch, ptx_file));
  absl::StatusOr<ProcessResult> run = RunProcess(argv);
  if (!run.ok()) return run.status();
  if (run->exit_code != 0)
    return absl::InternalError(
        fmt::format("fatbinary failed (exit {}):\n{}", run->exit_code, run->output));
  return ReadFile(scratch->File("kernel.fatbin"));
}

absl::StatusOr<uint32_t> PtxTargetArch(std::string_view ptx) {
  const size_t at = ptx.find("\n.target sm_");
  if (at == std::string_view::npos)
    return absl::InvalidArgumentError("the PTX declares no .target sm_NN");
  uint32_t arch = 0;
  for (size_t i = at + 12; i < ptx.size() && ptx[i] >= '0' && ptx[i] <= '9'; ++i)
    arch = arch * 10 + (ptx[i] - '0');
  if (arch == 0) return absl::InvalidArgumentError("the PTX's .target is not sm_NN");
  return arch;
}

}  // namespace spreplay
