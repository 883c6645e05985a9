#include "archive/archive.h"

#include <atomic>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "archive/archive_bytes.h"
#include "archive/archive_validation.h"
#include "archive/blob_kind.h"
#include "capnp/serialize.h"
#include "common/capnp_digest.h"
#include "common/crc32c.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

// A blob's checksum state, cached so each blob is checksummed at most once per open archive.
enum BlobCheck : uint8_t { kUnchecked = 0, kIntact = 1, kCorrupt = 2 };

kj::ArrayPtr<const capnp::word> IndexWords(std::span<const std::byte> file,
                                           const ArchiveHeader& header) {
  // Validated: the index lies inside the file at an 8-byte aligned offset of a page-aligned
  // base aligned to at least 256 bytes, so these are whole, aligned words.
  return kj::ArrayPtr<const capnp::word>(
      reinterpret_cast<const capnp::word*>(file.data() + header.index_offset),
      header.index_size / sizeof(capnp::word));
}

capnp::ReaderOptions ServingReaderOptions() {
  capnp::ReaderOptions options;
  // Cap'n Proto's traversal limit is a budget for the reader's whole life, and a serving reader
  // lives as long as the process, doing lookups without end. The index has already been walked
  // once under a limit proportional to its size, which is the protection the limit exists for.
  options.traversalLimitInWords = std::numeric_limits<uint64_t>::max();
  return options;
}

std::string KeyHex(schema::KernelEntry::Reader entry) { return HexOf(entry.getKey()); }

}  // namespace

struct Archive::Contents {
  Contents(std::string source_name, ArchiveBytes file, ArchiveHeader header, IndexFacts facts)
      : source_name(std::move(source_name)),
        file(std::move(file)),
        header(header),
        first_blob(std::move(facts.first_blob)),
        blob_checks(std::make_unique<std::atomic<uint8_t>[]>(first_blob.back())),
        reader(IndexWords(this->file.bytes(), header), ServingReaderOptions()),
        index(reader.getRoot<schema::ArchiveIndex>()),
        entries(index.getEntries()),
        modules(index.getModules()),
        module_checks(std::make_unique<std::atomic<uint8_t>[]>(modules.size())) {}

  const std::string source_name;
  const ArchiveBytes file;
  const ArchiveHeader header;
  const std::vector<uint64_t> first_blob;
  // Indexed by first_blob[kernel position] + blob position; value-initialised to kUnchecked.
  const std::unique_ptr<std::atomic<uint8_t>[]> blob_checks;
  capnp::FlatArrayMessageReader reader;
  const schema::ArchiveIndex::Reader index;
  const capnp::List<schema::KernelEntry>::Reader entries;
  const capnp::List<schema::ModuleEntry>::Reader modules;
  const std::unique_ptr<std::atomic<uint8_t>[]> module_checks;
};

namespace {

// The state of `check` for `bytes`, checksumming them on first use. Threads racing here compute
// the same answer over immutable bytes, so whichever stores last stores the same value.
BlobCheck CheckedOnce(std::atomic<uint8_t>& check, std::span<const std::byte> bytes,
                      uint32_t crc32c) {
  uint8_t state = check.load(std::memory_order_acquire);
  if (state == kUnchecked) {
    state = Crc32c(bytes) == crc32c ? kIntact : kCorrupt;
    check.store(state, std::memory_order_release);
  }
  return static_cast<BlobCheck>(state);
}

}  // namespace

absl::StatusOr<Archive> Archive::Open(const std::string& path) {
  absl::StatusOr<ArchiveBytes> mapping = ArchiveBytes::MapFile(path);
  if (!mapping.ok()) return mapping.status();
  return FromBytes(*std::move(mapping), path);
}

absl::StatusOr<Archive> Archive::Open(std::span<const std::byte> bytes,
                                      std::string_view source_name) {
  return FromBytes(ArchiveBytes::CopyOf(bytes), std::string(source_name));
}

absl::StatusOr<Archive> Archive::FromBytes(ArchiveBytes bytes, std::string source_name) {
  const std::span<const std::byte> file = bytes.bytes();
  const absl::StatusOr<ArchiveHeader> header = ValidateArchiveHeader(file, source_name);
  if (!header.ok()) return header.status();
  const kj::ArrayPtr<const capnp::word> words = IndexWords(file, *header);
  absl::StatusOr<IndexFacts> facts =
      ValidateArchiveIndex(std::span(words.begin(), words.size()), *header, source_name);
  if (!facts.ok()) return facts.status();
  return Archive(std::make_unique<Contents>(std::move(source_name), std::move(bytes), *header,
                                            *std::move(facts)));
}

Archive::Archive(std::unique_ptr<Contents> contents) : contents_(std::move(contents)) {}
Archive::Archive(Archive&&) noexcept = default;
Archive& Archive::operator=(Archive&&) noexcept = default;
Archive::~Archive() = default;

std::optional<ArchivedKernel> Archive::Find(const Digest& key) const {
  const auto& entries = contents_->entries;
  size_t low = 0;
  size_t high = entries.size();
  while (low < high) {
    const size_t middle = low + (high - low) / 2;
    const auto entry = entries[middle];
    // Keys were checked to be exactly 32 bytes at open.
    const int order = std::memcmp(entry.getKey().begin(), key.bytes.data(), key.bytes.size());
    if (order == 0) return ArchivedKernel{.position = middle, .entry = entry};
    if (order < 0) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return std::nullopt;
}

size_t Archive::kernel_count() const { return contents_->entries.size(); }

ArchivedKernel Archive::kernel(size_t position) const {
  return ArchivedKernel{.position = position,
                        .entry = contents_->entries[static_cast<unsigned>(position)]};
}

absl::StatusOr<std::span<const std::byte>> Archive::Blob(const ArchivedKernel& kernel,
                                                         schema::BlobKind kind,
                                                         uint32_t arch) const {
  const Contents& contents = *contents_;
  // The entry is looked up again by position rather than taken from `kernel`, so a handle from
  // another archive cannot lead this one to bytes or checksum state that are not its own.
  if (kernel.position >= contents.entries.size()) {
    return absl::InvalidArgumentError(
        fmt::format("kernel position {} is out of range for {}, which holds {} kernels",
                    kernel.position, contents.source_name, contents.entries.size()));
  }
  const auto entry = contents.entries[static_cast<unsigned>(kernel.position)];
  const auto blobs = entry.getBlobs();
  for (unsigned i = 0; i < blobs.size(); ++i) {
    const auto blob = blobs[i];
    if (blob.getKind() != kind || blob.getArch() != arch) continue;

    // Validated at open: the blob lies inside the file.
    const std::span<const std::byte> bytes =
        contents.file.bytes().subspan(blob.getOffset(), blob.getSize());
    std::atomic<uint8_t>& check = contents.blob_checks[contents.first_blob[kernel.position] + i];
    if (CheckedOnce(check, bytes, blob.getCrc32c()) == kCorrupt) {
      return absl::DataLossError(fmt::format(
          "the {} for arch {} of kernel {} in {} fails its checksum, so the archive is damaged; {}",
          BlobKindName(kind), arch, KeyHex(entry), contents.source_name, kRebuildArchiveAdvice));
    }
    return bytes;
  }
  return absl::NotFoundError(fmt::format("kernel {} in {} has no {} for arch {}", KeyHex(entry),
                                         contents.source_name, BlobKindName(kind), arch));
}

absl::StatusOr<std::span<const std::byte>> Archive::ModuleIr(size_t position) const {
  const Contents& contents = *contents_;
  if (position >= contents.modules.size()) {
    return absl::InvalidArgumentError(
        fmt::format("module position {} is out of range for {}, which holds {} modules", position,
                    contents.source_name, contents.modules.size()));
  }
  const auto module = contents.modules[static_cast<unsigned>(position)];
  const auto blob = module.getBlob();
  // Validated at open: the blob lies inside the file.
  const std::span<const std::byte> bytes =
      contents.file.bytes().subspan(blob.getOffset(), blob.getSize());
  if (CheckedOnce(contents.module_checks[position], bytes, blob.getCrc32c()) == kCorrupt) {
    return absl::DataLossError(
        fmt::format("the IR of module '{}' in {} fails its checksum, so the archive is damaged; {}",
                    module.getName().cStr(), contents.source_name, kRebuildArchiveAdvice));
  }
  return bytes;
}

const ArchiveHeader& Archive::header() const { return contents_->header; }
schema::ArchiveIndex::Reader Archive::index() const { return contents_->index; }
std::span<const std::byte> Archive::bytes() const { return contents_->file.bytes(); }
const std::string& Archive::source_name() const { return contents_->source_name; }

}  // namespace spreplay
