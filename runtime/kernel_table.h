#pragma once
// Kernels registered in memory by key (spreplay_add_kernel), served through
// the hooks. For tests and tools that build a kernel in-process.

#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "interpose/hook_listener.h"

namespace spreplay {

class KernelTable final : public HookListener {
 public:
  void Add(const Digest& key, std::string code);

  KernelDecision DecideKernel(const KernelRequest& request, ServedKernel* served,
                              std::string* refusal) override;

 private:
  mutable std::mutex mutex_;
  // Node-based so the served bytes never move while Slang's caller reads them.
  absl::flat_hash_map<Digest, std::unique_ptr<const std::string>> kernels_;
};

}  // namespace spreplay
