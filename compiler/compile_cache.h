#pragma once
// A content-addressed cache of compiled artefacts, so recompiling a trace
// whose kernels did not change does no Slang and no ptxas work.
//
// Entries are named by a digest of everything that produced them; each is a
// file written to a temporary name and renamed into place, with a SHA-256 of
// its contents in front, so concurrent compilers share a cache safely and a
// damaged entry reads as a miss, never as wrong code.

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/sha256.h"

namespace spreplay {

class CompileCache {
 public:
  // An empty directory disables the cache.
  explicit CompileCache(std::string directory) : directory_(std::move(directory)) {}

  std::optional<std::string> Get(const Digest& name) const;
  absl::Status Put(const Digest& name, std::string_view bytes) const;
  // Stores `bytes` unless an intact entry of that name exists, and returns
  // the entry's bytes either way: of several compilers racing to store one
  // artefact that is not byte-reproducible, all end up with the first stored.
  absl::StatusOr<std::string> PutFirst(const Digest& name, std::string_view bytes) const;

  bool enabled() const { return !directory_.empty(); }

 private:
  std::string PathOf(const Digest& name) const;
  // Writes an entry under a temporary name beside its own; returns that name.
  absl::StatusOr<std::string> WriteTemporary(const Digest& name, std::string_view bytes) const;
  std::string directory_;
};

// ~/.cache/spreplay (or $XDG_CACHE_HOME/spreplay).
std::string DefaultCacheDirectory();

}  // namespace spreplay
