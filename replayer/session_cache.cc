#include "replayer/session_cache.h"

#include <algorithm>

#include "interpose/key_hasher.h"

namespace spreplay {
namespace {

void HashLocations(KeyHasher& hasher, const std::vector<CompilerOption>& options) {
  for (const CompilerOption& option : options) {
    if (IsLocationOption(option)) hasher.Integer(option.name).Text(option.string0).Text(option.string1);
  }
}

}  // namespace

Digest SessionCacheKey(const SessionConfig& config) {
  KeyHasher hasher("spreplay.replay-session.v1");
  hasher.Hash(config.ContentDigest());
  hasher.Integer(static_cast<int64_t>(config.search_paths.size()));
  for (const std::string& path : config.search_paths) hasher.Text(path);
  HashLocations(hasher, config.options);
  for (const TargetConfig& target : config.targets) HashLocations(hasher, target.options);
  return hasher.Finish();
}

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
