#include "runtime/kernel_table.h"

namespace spreplay {

void KernelTable::Add(const Digest& key, std::string code) {
  std::lock_guard lock(mutex_);
  kernels_[key] = std::make_unique<const std::string>(std::move(code));
}

bool KernelTable::FindKernel(const KernelRequest& request, ServedKernel* served) {
  std::lock_guard lock(mutex_);
  auto it = kernels_.find(request.key);
  if (it == kernels_.end()) return false;
  served->data = it->second->data();
  served->size = it->second->size();
  ++counts_.served;
  return true;
}

void KernelTable::OnKernelCompiled(const KernelRequest& request, const void*, size_t, double) {
  std::lock_guard lock(mutex_);
  if (request.program && request.program->keyable && request.session) {
    ++counts_.compiled;
  } else {
    ++counts_.not_keyable;
  }
}

RequestCounts KernelTable::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

}  // namespace spreplay
