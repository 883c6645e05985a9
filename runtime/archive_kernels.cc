#include "runtime/archive_kernels.h"

#include <algorithm>

#include "archive/archive_validation.h"
#include "common/fmt_absl.h"
#include "common/stderr_line.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace spreplay {

absl::StatusOr<std::unique_ptr<ArchiveKernels>> ArchiveKernels::Open(const std::string& path,
                                                                     ServingOptions options) {
  absl::StatusOr<Archive> archive = Archive::Open(path);
  if (!archive.ok()) return archive.status();
  return std::unique_ptr<ArchiveKernels>(new ArchiveKernels(*std::move(archive), options));
}

ArchiveKernels::ArchiveKernels(Archive archive, ServingOptions options)
    : archive_(std::move(archive)), options_(options) {}

void ArchiveKernels::OnToolchainKnown(const std::string& toolchain, const std::string&) {
  const std::string archived = archive_.index().getToolchain();
  if (archived == toolchain) return;
  std::lock_guard lock(mutex_);
  disabled_reason_ =
      fmt::format("{} was built for {}, but this process runs {}", path(), archived, toolchain);
  PrintLineToStderr(fmt::format("spreplay: {}: {}; {}", disabled_reason_,
                                options_.strict ? "every kernel fails (SLANGPY_KERNELS_STRICT)"
                                                : "every kernel compiles as usual",
                                kRebuildArchiveAdvice));
}

std::string ArchiveKernels::disabled_reason() const {
  std::lock_guard lock(mutex_);
  return disabled_reason_;
}

void ArchiveKernels::NameCallSite(const std::string& wrapper_module, CallSiteName name) {
  std::lock_guard lock(mutex_);
  names_[wrapper_module] = std::move(name);
}

std::vector<MissRecord> ArchiveKernels::misses() const {
  std::lock_guard lock(mutex_);
  return misses_;
}

const CallSiteName* ArchiveKernels::NameOf(const KernelRequest& request) const {
  for (const std::string& wrapper : WrapperModuleNames(request.program)) {
    if (auto it = names_.find(wrapper); it != names_.end()) return &it->second;
  }
  return nullptr;
}

KernelDecision ArchiveKernels::Miss(const KernelRequest& request, std::string reason,
                                    std::string* refusal, bool announced) {
  std::lock_guard lock(mutex_);
  const CallSiteName* name = NameOf(request);
  const std::vector<std::string> wrappers = WrapperModuleNames(request.program);
  const std::string label = name ? name->Label()
                            : wrappers.empty()
                                ? "an unnamed kernel"
                                : fmt::format("wrapper {}", wrappers.front().substr(0, 16));
  misses_.push_back({label, reason, options_.strict});
  if (options_.strict) {
    *refusal = fmt::format(
        "spreplay: {} is not in {} ({}); SLANGPY_KERNELS_STRICT forbids compiling it: "
        "record it and rebuild the archive",
        label, path(), reason);
    PrintLineToStderr(*refusal);
    return KernelDecision::kRefuse;
  }
  if (options_.warn && !announced && warned_.insert(label).second) {
    PrintLineToStderr(
        fmt::format("spreplay: compiling {}: not served from {}: {}", label, path(), reason));
  }
  return KernelDecision::kPass;
}

KernelDecision ArchiveKernels::DecideKernel(const KernelRequest& request, ServedKernel* served,
                                            std::string* refusal) {
  // The archive was refused whole, in one line: each kernel's miss says no more.
  if (std::string reason = disabled_reason(); !reason.empty())
    return Miss(request, reason, refusal, /*announced=*/true);
  // Explaining scans the archive: outside the lock, which hits also take.
  auto explain = [&] {
    std::optional<CallSiteName> name;
    {
      std::lock_guard lock(mutex_);
      if (const CallSiteName* named = NameOf(request)) name = *named;
    }
    return ExplainMiss(archive_, request, name ? &*name : nullptr);
  };
  if (!request.session || !request.program->keyable) return Miss(request, explain(), refusal);
  std::optional<ArchivedKernel> kernel = archive_.Find(request.key);
  if (!kernel) return Miss(request, explain(), refusal);

  if (kernel->entry.getOptix()) {
    // OptiX compiles the PTX itself when it creates the pipeline.
    absl::StatusOr<std::span<const std::byte>> ptx =
        archive_.Blob(*kernel, schema::BlobKind::PTX, kernel->entry.getPtxArch());
    if (!ptx.ok()) return Miss(request, std::string(ptx.status().message()), refusal);
    served->data = ptx->data();
    served->size = ptx->size();
    return KernelDecision::kServe;
  }
  // A fatbin without SASS for this GPU would make the driver JIT its PTX,
  // silently paying what the archive exists to avoid.
  absl::StatusOr<std::vector<uint32_t>> arches = options_.arches();
  if (!arches.ok()) return Miss(request, std::string(arches.status().message()), refusal);
  std::vector<uint32_t> archived;
  for (uint32_t arch : kernel->entry.getSassArches()) archived.push_back(arch);
  for (uint32_t arch : *arches) {
    if (std::find(archived.begin(), archived.end(), arch) == archived.end()) {
      return Miss(request,
                  fmt::format("the archive has no SASS for this GPU (sm_{}; archived: sm_{}): "
                              "rebuild it with `spreplay compile --arch ...,{}`",
                              arch, fmt::join(archived, ", sm_"), arch),
                  refusal);
    }
  }
  absl::StatusOr<std::span<const std::byte>> fatbin =
      archive_.Blob(*kernel, schema::BlobKind::FATBIN);
  if (!fatbin.ok()) return Miss(request, std::string(fatbin.status().message()), refusal);
  served->data = fatbin->data();
  served->size = fatbin->size();
  return KernelDecision::kServe;
}

}  // namespace spreplay
