#pragma once
// Digests as Cap'n Proto Data fields, in both directions, and Data as hex.

#include <algorithm>
#include <string>

#include "absl/status/statusor.h"
#include "capnp/blob.h"
#include "common/sha256.h"
#include "fmt/format.h"

namespace spreplay {

// A view of `digest`'s bytes; `digest` must outlive it.
inline capnp::Data::Reader DataOf(const Digest& digest) {
  return capnp::Data::Reader(reinterpret_cast<const kj::byte*>(digest.bytes.data()),
                             digest.bytes.size());
}

inline absl::StatusOr<Digest> DigestFromData(capnp::Data::Reader data) {
  Digest digest;
  if (data.size() != digest.bytes.size())
    return absl::DataLossError(fmt::format("a digest of {} bytes (expected 32)", data.size()));
  std::copy(data.begin(), data.end(), digest.bytes.begin());
  return digest;
}

inline std::string HexOf(capnp::Data::Reader data) {
  std::string hex;
  hex.reserve(2 * data.size());
  for (const kj::byte b : data) fmt::format_to(std::back_inserter(hex), "{:02x}", b);
  return hex;
}

}  // namespace spreplay
