// Decides whether untrusted bytes are an archive the reader can serve from. Everything the reader
// later touches is checked here once, at open, so lookups and blob reads need no checks of their
// own beyond the blob checksums, and nothing read from the file can take the reader out of bounds.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "archive/archive_format.h"
#include "capnp/common.h"

namespace spreplay {

// Appended to every error about a damaged archive: the one fix that always works.
inline constexpr std::string_view kRebuildArchiveAdvice = "rebuild it with `spreplay compile`";

// Checks the header against the file: magic, a format version this build reads, every region
// inside the file, the recorded size equal to the actual one (so truncation is caught), and the
// index checksum. Errors name `source_name` and say what is wrong.
absl::StatusOr<ArchiveHeader> ValidateArchiveHeader(std::span<const std::byte> file,
                                                    std::string_view source_name);

struct IndexFacts {
  // first_blob[i] is the number of blob records in the entries before entry i, and the last
  // element the total: a dense numbering of blob records for per-blob state.
  std::vector<uint64_t> first_blob;
};

// Parses the index under a traversal limit proportional to its size and reads every field the
// reader and inspect use: keys are 32 bytes and strictly ascending, digests are 32 bytes (or
// absent), every text is well formed, and every blob lies 256-aligned between the header and the
// index. Fails on anything else, including a malformed message.
absl::StatusOr<IndexFacts> ValidateArchiveIndex(std::span<const capnp::word> index_words,
                                                const ArchiveHeader& header,
                                                std::string_view source_name);

}  // namespace spreplay
