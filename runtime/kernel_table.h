#pragma once
// Kernels registered in memory by key, served to Slang's callers through the
// hooks. Also counts what happened to every request, for the summary.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "interpose/hook_listener.h"

namespace spreplay {

struct RequestCounts {
  uint64_t served = 0;
  uint64_t compiled = 0;
  uint64_t not_keyable = 0;
};

class KernelTable final : public HookListener {
 public:
  void Add(const Digest& key, std::string code);

  bool FindKernel(const KernelRequest& request, ServedKernel* served) override;
  void OnKernelCompiled(const KernelRequest& request, const void* code, size_t size,
                        double seconds) override;

  RequestCounts counts() const;

 private:
  mutable std::mutex mutex_;
  // Node-based so the served bytes never move while Slang's caller reads them.
  absl::flat_hash_map<Digest, std::unique_ptr<const std::string>> kernels_;
  RequestCounts counts_;
};

}  // namespace spreplay
