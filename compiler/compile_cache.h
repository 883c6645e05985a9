#pragma once
// A content-addressed cache of compiled artefacts, so recompiling a trace
// whose kernels did not change does no Slang and no ptxas work.
//
// Entries are named by a digest of everything that produced them; each is a
// file written to a temporary name and renamed into place, with a SHA-256 of
// its contents in front, so concurrent compilers share a cache safely and a
// damaged entry reads as a miss, never as wrong code.

#include <chrono>
#include <cstddef>
#include <cstdint>
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

  // What Trim found and did.
  struct TrimOutcome {
    uint64_t bytes_before = 0;
    uint64_t bytes_after = 0;
    size_t entries_removed = 0;
  };
  // Removes the entries used longest ago (a Get or a write uses one) until
  // the cache holds `max_bytes` at most (0: no limit), and the temporary
  // files of writers that died, once older than `abandoned_after`. Entries
  // are named by their content, so one removed is only a miss: the next
  // compile that needs it builds and stores it again. Another compile may
  // trim or read at the same time: a file gone before it opens it is a miss
  // too.
  absl::StatusOr<TrimOutcome> Trim(
      uint64_t max_bytes, std::chrono::seconds abandoned_after = std::chrono::hours(1)) const;

 private:
  std::string PathOf(const Digest& name) const;
  // Writes an entry under a temporary name beside its own; returns that name.
  absl::StatusOr<std::string> WriteTemporary(const Digest& name, std::string_view bytes) const;
  std::string directory_;
};

// ~/.cache/spreplay (or $XDG_CACHE_HOME/spreplay).
std::string DefaultCacheDirectory();

// A size as `--cache-max-size` and SPREPLAY_CACHE_MAX_SIZE give it: a
// number of bytes, or of KiB, MiB, GiB or TiB with a K, M, G or T after it
// ("500M", "20G"); 0 for no limit.
absl::StatusOr<uint64_t> ParseCacheSize(std::string_view text);

}  // namespace spreplay
