#pragma once
// Replay sessions kept for the next kernel of the same session configuration,
// so that a trace of many call sites runs the front end of shared modules
// (slangpy's core module, the user's modules) once rather than per kernel.

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "common/sha256.h"
#include "replayer/replay_session.h"

namespace spreplay {

// Keyed by SessionConfig::LocationDigest: two sessions that differ only in
// where they look for files must not share loaded modules.
class SessionCache {
 public:
  explicit SessionCache(size_t capacity) : capacity_(capacity) {}

  // Removes the session cached under `key`, if any: the caller owns it while
  // it replays and returns it with Put only if it stays reusable.
  std::unique_ptr<ReplaySession> Take(const Digest& key);
  // Caches `session`, dropping the least recently used one beyond capacity.
  void Put(const Digest& key, std::unique_ptr<ReplaySession> session);

 private:
  size_t capacity_;
  std::vector<std::pair<Digest, std::unique_ptr<ReplaySession>>> entries_;  // oldest first
};

}  // namespace spreplay
