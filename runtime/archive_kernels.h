#pragma once
// Serves kernels from a memory-mapped archive (SLANGPY_KERNELS), and decides
// what happens on a miss: compile as usual with a one-line warning per call
// site, or, in strict mode, fail the request.

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "archive/archive.h"
#include "interpose/hook_listener.h"
#include "runtime/cuda_arch.h"
#include "runtime/miss_explanation.h"

namespace spreplay {

struct ServingOptions {
  bool strict = false;  // a miss fails the request instead of compiling
  bool warn = true;     // one line on stderr per missed call site
  // The GPU architectures a served kernel must have SASS for.
  std::function<absl::StatusOr<std::vector<uint32_t>>()> arches = ArchesToServe;
};

struct MissRecord {
  std::string call_site;  // "module.function (kind)" or the wrapper's name
  std::string reason;
  bool refused = false;  // strict mode failed the request; otherwise Slang compiled it
};

class ArchiveKernels final : public HookListener {
 public:
  static absl::StatusOr<std::unique_ptr<ArchiveKernels>> Open(const std::string& path,
                                                              ServingOptions options);

  void OnToolchainKnown(const std::string& toolchain, const std::string& slang_build_tag) override;
  KernelDecision DecideKernel(const KernelRequest& request, ServedKernel* served,
                              std::string* refusal) override;

  // Names call sites in messages and finds their archived builds when the
  // wrapper's name changed: slangpy's hash → module, function and kind.
  void NameCallSite(const std::string& wrapper_module, CallSiteName name);

  std::vector<MissRecord> misses() const;
  const std::string& path() const { return archive_.source_name(); }
  const Archive& archive() const { return archive_; }
  size_t kernel_count() const { return archive_.kernel_count(); }
  // Set when the whole archive cannot serve this process (another toolchain).
  std::string disabled_reason() const;

 private:
  ArchiveKernels(Archive archive, ServingOptions options);
  // Records the miss and, once per call site, says so on stderr, unless
  // `announced` (a line has said it for every kernel).
  KernelDecision Miss(const KernelRequest& request, std::string reason, std::string* refusal,
                      bool announced = false);
  const CallSiteName* NameOf(const KernelRequest& request) const;  // callers hold mutex_

  Archive archive_;
  ServingOptions options_;
  mutable std::mutex mutex_;
  std::string disabled_reason_;
  absl::flat_hash_map<std::string, CallSiteName> names_;
  absl::flat_hash_set<std::string> warned_;
  std::vector<MissRecord> misses_;
};

}  // namespace spreplay
