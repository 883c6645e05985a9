#include "runtime/kernel_table.h"

namespace spreplay {

void KernelTable::Add(const Digest& key, std::string code) {
  std::lock_guard lock(mutex_);
  // First wins: a served kernel's bytes must outlive the blob Slang's caller
  // holds, and a key names one content anyway.
  kernels_.try_emplace(key, std::make_unique<const std::string>(std::move(code)));
}

KernelDecision KernelTable::DecideKernel(const KernelRequest& request, ServedKernel* served,
                                         std::string*) {
  if (!request.program->keyable || !request.session) return KernelDecision::kPass;
  std::lock_guard lock(mutex_);
  auto it = kernels_.find(request.key);
  if (it == kernels_.end()) return KernelDecision::kPass;
  served->data = it->second->data();
  served->size = it->second->size();
  return KernelDecision::kServe;
}

}  // namespace spreplay
