// SHA-256 as specified in FIPS 180-4. Traces name their contents by digest, so this must be
// bit-exact with every other SHA-256 implementation; it is self-contained to avoid pulling a
// crypto library into the interposer.
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"

namespace spreplay {

struct Digest {
  std::array<uint8_t, 32> bytes{};

  // Lowercase, 64 characters.
  std::string ToHex() const;
  // Accepts exactly 64 hex characters, either case.
  static absl::StatusOr<Digest> FromHex(std::string_view hex);

  friend bool operator==(const Digest&, const Digest&) = default;
  friend std::strong_ordering operator<=>(const Digest&, const Digest&) = default;

  // Lets digests key absl::flat_hash_map without a custom hasher.
  template <typename H>
  friend H AbslHashValue(H state, const Digest& digest) {
    return H::combine(std::move(state), digest.bytes);
  }
};

// Incremental hasher. Not thread-safe; cheap to construct, so make one per stream.
class Sha256 {
 public:
  Sha256();

  void Update(std::string_view data);
  void Update(std::span<const std::byte> data);

  // Returns the digest of everything passed to Update and resets the hasher, so the object can
  // be reused for the next stream.
  Digest Finish();

 private:
  static constexpr size_t kBlockSize = 64;

  void UpdateBytes(const uint8_t* data, size_t size);
  void Reset();

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, kBlockSize> pending_;
  size_t pending_size_ = 0;
  uint64_t total_size_ = 0;
};

Digest Sha256Of(std::string_view data);
Digest Sha256Of(std::span<const std::byte> data);

// The two compression functions, exposed so tests can check them against each
// other. Each folds `block_count` 64-byte blocks into `state`.
namespace sha256_internal {

void CompressPortable(std::array<uint32_t, 8>& state, const uint8_t* blocks, size_t block_count);
// x86's SHA extensions; a compile or an archive's load hashes hundreds of
// megabytes of IR and machine code, at several times the portable speed.
bool HardwareSha256Available();
// Only call when HardwareSha256Available() is true.
void CompressHardware(std::array<uint32_t, 8>& state, const uint8_t* blocks, size_t block_count);

}  // namespace sha256_internal

}  // namespace spreplay
