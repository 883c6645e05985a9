#include "replayer/session_cache.h"

#include <algorithm>

namespace spreplay {

std::unique_ptr<ReplaySession> SessionCache::Take(const Digest& key) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const auto& entry) { return entry.first == key; });
  if (it == entries_.end()) return nullptr;
  std::unique_ptr<ReplaySession> session = std::move(it->second);
  entries_.erase(it);
  return session;
}

void SessionCache::Put(const Digest& key, std::unique_ptr<ReplaySession> session) {
  if (capacity_ == 0) return;
  entries_.emplace_back(key, std::move(session));
  if (entries_.size() > capacity_) entries_.erase(entries_.begin());
}

}  // namespace spreplay
