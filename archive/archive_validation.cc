#include "archive/archive_validation.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "capnp/serialize.h"
#include "common/crc32c.h"
#include "common/leading_bytes.h"
#include "common/sha256.h"
#include "fmt/format.h"
#include "kj/exception.h"
#include "schema/archive.capnp.h"

namespace spreplay {
namespace {

constexpr size_t kDigestSize = sizeof(Digest::bytes);

absl::Status Damaged(std::string_view source_name, std::string_view problem) {
  return absl::DataLossError(
      fmt::format("{} is damaged: {}; {}", source_name, problem, kRebuildArchiveAdvice));
}

absl::Status CheckRegions(const ArchiveHeader& header, uint64_t actual_size,
                          std::string_view source_name) {
  if (header.header_size < kArchiveHeaderSize || header.header_size % kArchiveIndexAlignment != 0 ||
      header.header_size > actual_size) {
    return Damaged(source_name,
                   fmt::format("its header records a header size of {} bytes", header.header_size));
  }
  if (header.file_size > actual_size) {
    return absl::DataLossError(fmt::format(
        "{} is truncated: it has {} bytes but was written with {} (interrupted copy or download?); "
        "copy it again or {}",
        source_name, actual_size, header.file_size, kRebuildArchiveAdvice));
  }
  if (header.file_size < actual_size) {
    return Damaged(source_name, fmt::format("it has {} bytes but was written with {}", actual_size,
                                            header.file_size));
  }
  // Each comparison is arranged so no sum can overflow on hostile values.
  if (header.index_size == 0 || header.index_size % kArchiveIndexAlignment != 0 ||
      header.index_offset % kArchiveIndexAlignment != 0 ||
      header.index_offset < header.header_size || header.index_offset > actual_size ||
      header.index_size > actual_size - header.index_offset) {
    return Damaged(source_name, fmt::format("its index ({} bytes at offset {}) does not fit in "
                                            "its {} bytes",
                                            header.index_size, header.index_offset, actual_size));
  }
  return absl::OkStatus();
}

bool IsDigestSized(capnp::Data::Reader data) { return data.size() == kDigestSize; }
bool IsDigestOrAbsent(capnp::Data::Reader data) { return data.size() == 0 || IsDigestSized(data); }

// Walks one entry, reading each pointer field exactly once so the traversal limit stays a tight
// multiple of the index size. Text getters verify their NUL terminators as a side effect.
absl::Status CheckEntry(schema::KernelEntry::Reader entry, size_t position,
                        const ArchiveHeader& header, std::string_view source_name,
                        uint64_t& blob_count) {
  auto bad = [&](std::string_view what) {
    return Damaged(source_name, fmt::format("index entry {} {}", position, what));
  };
  const auto call_site = entry.getCallSite();
  call_site.getModuleName();
  call_site.getFunctionName();
  call_site.getCallKind();
  call_site.getWrapperModuleName();
  call_site.getEntryPointName();
  for (const auto dependency : entry.getManifest()) {
    if (!IsDigestOrAbsent(dependency.getDigest())) return bad("has a malformed dependency digest");
    dependency.getPath();
  }
  if (!IsDigestOrAbsent(entry.getSessionDigest())) return bad("has a malformed session digest");
  if (!IsDigestOrAbsent(entry.getProgramDigest())) return bad("has a malformed program digest");
  entry.getSassArches();
  const auto blobs = entry.getBlobs();
  for (const auto blob : blobs) {
    const uint64_t offset = blob.getOffset();
    const uint64_t size = blob.getSize();
    if (offset % kArchiveBlobAlignment != 0 || offset < header.header_size ||
        offset > header.index_offset || size > header.index_offset - offset) {
      return bad(fmt::format("places a blob of {} bytes at offset {}, outside the blob region",
                             size, offset));
    }
    if (!IsDigestOrAbsent(blob.getSha256())) return bad("has a malformed blob digest");
  }
  blob_count += blobs.size();
  return absl::OkStatus();
}

absl::Status CheckModuleFile(schema::ModuleFile::Reader file) {
  file.getRelativePath();
  file.getRecordedPath();
  return IsDigestOrAbsent(file.getDigest()) ? absl::OkStatus()
                                            : absl::DataLossError("malformed file digest");
}

absl::Status CheckModule(schema::ModuleEntry::Reader module, size_t position,
                         const ArchiveHeader& header, std::string_view source_name) {
  auto bad = [&](std::string_view what) {
    return Damaged(source_name, fmt::format("module entry {} {}", position, what));
  };
  if (!IsDigestSized(module.getKey())) return bad("has a malformed key");
  if (!IsDigestSized(module.getSessionDigest())) return bad("has a malformed session digest");
  if (!IsDigestSized(module.getContentDigest())) return bad("has a malformed content digest");
  if (!IsDigestOrAbsent(module.getSourceLookup())) return bad("has a malformed source lookup");
  module.getName();
  module.getRequestedName();
  module.getPath();
  for (const auto file : module.getFiles()) {
    if (!CheckModuleFile(file).ok()) return bad("has a malformed file digest");
  }
  if (!CheckModuleFile(module.getFilePath()).ok()) return bad("has a malformed path");
  if (!CheckModuleFile(module.getRequestedFile()).ok()) return bad("has a malformed request");
  for (const auto imported : module.getImports()) {
    if (!IsDigestSized(imported)) return bad("has a malformed import key");
  }
  const auto blob = module.getBlob();
  const uint64_t offset = blob.getOffset();
  const uint64_t size = blob.getSize();
  if (blob.getKind() != schema::BlobKind::SLANG_MODULE || size == 0 ||
      offset % kArchiveBlobAlignment != 0 || offset < header.header_size ||
      offset > header.index_offset || size > header.index_offset - offset) {
    return bad(fmt::format("places its IR ({} bytes) at offset {}, outside the blob region", size,
                           offset));
  }
  if (!IsDigestOrAbsent(blob.getSha256())) return bad("has a malformed blob digest");
  return absl::OkStatus();
}

absl::StatusOr<IndexFacts> CheckIndex(schema::ArchiveIndex::Reader index,
                                      const ArchiveHeader& header, std::string_view source_name) {
  if (index.getFormatVersion() != header.format_version) {
    return Damaged(source_name, fmt::format("its header says format {} but its index says {}",
                                            header.format_version, index.getFormatVersion()));
  }
  index.getToolchain();
  index.getSpreplayVersion();
  const auto creation = index.getCreation();
  creation.getHost();
  creation.getCommand();

  IndexFacts facts;
  const auto entries = index.getEntries();
  facts.first_blob.reserve(entries.size() + 1);
  uint64_t blob_count = 0;
  capnp::Data::Reader previous_key;
  for (unsigned i = 0; i < entries.size(); ++i) {
    const auto entry = entries[i];
    const capnp::Data::Reader key = entry.getKey();
    if (!IsDigestSized(key)) {
      return Damaged(source_name, fmt::format("index entry {} has a {}-byte key, not {}", i,
                                              key.size(), kDigestSize));
    }
    // Strictly ascending: the reader binary-searches, and a duplicate key would be ambiguous.
    if (i > 0 && std::memcmp(previous_key.begin(), key.begin(), kDigestSize) >= 0) {
      return Damaged(source_name, fmt::format("index entry {} is out of key order", i));
    }
    previous_key = key;
    facts.first_blob.push_back(blob_count);
    if (absl::Status status = CheckEntry(entry, i, header, source_name, blob_count); !status.ok()) {
      return status;
    }
  }
  facts.first_blob.push_back(blob_count);
  const auto unbuilt = index.getUnbuilt();
  for (unsigned i = 0; i < unbuilt.size(); ++i) {
    if (!IsDigestSized(unbuilt[i].getKey())) {
      return Damaged(source_name, fmt::format("unbuilt kernel {} has a {}-byte key, not {}", i,
                                              unbuilt[i].getKey().size(), kDigestSize));
    }
    unbuilt[i].getReason();
    const auto call_site = unbuilt[i].getCallSite();
    call_site.getModuleName();
    call_site.getFunctionName();
    call_site.getCallKind();
    call_site.getWrapperModuleName();
    call_site.getEntryPointName();
  }
  const auto sessions = index.getSessions();
  for (unsigned i = 0; i < sessions.size(); ++i) {
    if (!IsDigestSized(sessions[i].getDigest())) {
      return Damaged(source_name, fmt::format("session settings {} have a {}-byte digest, not {}",
                                              i, sessions[i].getDigest().size(), kDigestSize));
    }
    for (auto line : sessions[i].getSettings()) line.size();
  }
  const auto modules = index.getModules();
  for (unsigned i = 0; i < modules.size(); ++i) {
    if (absl::Status status = CheckModule(modules[i], i, header, source_name); !status.ok())
      return status;
  }
  for (const auto unserved : index.getUnservedModules()) {
    if (!IsDigestOrAbsent(unserved.getSessionDigest()))
      return Damaged(source_name, "an unserved module has a malformed session digest");
    unserved.getName();
    unserved.getReason();
  }
  return facts;
}

}  // namespace

absl::StatusOr<ArchiveHeader> ValidateArchiveHeader(std::span<const std::byte> file,
                                                    std::string_view source_name) {
  if (file.empty()) {
    return absl::DataLossError(fmt::format(
        "{} is empty: a kernel archive has at least a {}-byte header (compile interrupted?); {}",
        source_name, kArchiveHeaderSize, kRebuildArchiveAdvice));
  }
  const size_t magic_bytes = std::min(file.size(), kArchiveMagic.size());
  if (std::memcmp(file.data(), kArchiveMagic.data(), magic_bytes) != 0) {
    return absl::InvalidArgumentError(
        fmt::format("{} is not a spreplay kernel archive (starts with {})", source_name,
                    DescribeLeadingBytes(file, kArchiveMagic.size())));
  }
  if (file.size() < kArchiveHeaderSize) {
    return absl::DataLossError(
        fmt::format("{} is truncated: {} bytes, less than the {}-byte archive header; {}",
                    source_name, file.size(), kArchiveHeaderSize, kRebuildArchiveAdvice));
  }
  const ArchiveHeader header = DecodeArchiveHeader(file);
  if (header.format_version == 0) {
    return Damaged(source_name, "its header claims archive format 0, which never existed");
  }
  if (header.format_version > kArchiveFormatVersion) {
    return absl::FailedPreconditionError(fmt::format(
        "{} was written by a newer spreplay: archive format {}, this build reads up to {}; "
        "upgrade spreplay or {}",
        source_name, header.format_version, kArchiveFormatVersion, kRebuildArchiveAdvice));
  }
  if (header.format_version < kArchiveFormatVersion) {
    return absl::FailedPreconditionError(fmt::format(
        "{} was written by an older spreplay (archive format {}), whose keys this build (format "
        "{}) does not use: record the app again and {}",
        source_name, header.format_version, kArchiveFormatVersion, kRebuildArchiveAdvice));
  }
  if (absl::Status status = CheckRegions(header, file.size(), source_name); !status.ok()) {
    return status;
  }
  const uint32_t crc = Crc32c(file.subspan(header.index_offset, header.index_size));
  if (crc != header.index_crc32c) {
    return Damaged(source_name,
                   fmt::format("its index fails its checksum (stored {:#010x}, computed {:#010x})",
                               header.index_crc32c, crc));
  }
  return header;
}

absl::StatusOr<IndexFacts> ValidateArchiveIndex(std::span<const capnp::word> index_words,
                                                const ArchiveHeader& header,
                                                std::string_view source_name) {
  capnp::ReaderOptions options;
  // A valid index is traversed once here, so a few times its size is ample; the limit only bites
  // on crafted messages whose pointers alias to make a small index look enormous.
  options.traversalLimitInWords = 4 * uint64_t{index_words.size()} + 1024;
  try {
    capnp::FlatArrayMessageReader reader(
        kj::ArrayPtr<const capnp::word>(index_words.data(), index_words.size()), options);
    return CheckIndex(reader.getRoot<schema::ArchiveIndex>(), header, source_name);
  } catch (const kj::Exception& exception) {
    // Cap'n Proto reports malformed messages by throwing; this is the only place its exceptions
    // can arise, because later reads only revisit what this walk has already checked.
    return Damaged(source_name,
                   fmt::format("its index is malformed ({})", exception.getDescription().cStr()));
  }
}

}  // namespace spreplay
