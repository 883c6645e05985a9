#include "archive/archive.h"

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "archive/archive_format.h"
#include "archive/archive_writer.h"
#include "archive/describe_archive.h"
#include "capnp/message.h"
#include "capnp/serialize.h"
#include "common/capnp_digest.h"
#include "common/crc32c.h"
#include "common/fmt_absl.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spreplay {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ---------------------------------------------------------------------------------------------
// Helpers

// Deterministic pseudo-random bytes, so a test can recompute what a blob must contain.
std::vector<std::byte> PatternBytes(uint64_t seed, size_t size) {
  std::vector<std::byte> bytes(size);
  std::mt19937_64 random(seed);
  for (std::byte& b : bytes) b = static_cast<std::byte>(random());
  return bytes;
}

Digest KeyOf(uint64_t i) { return Sha256Of(fmt::format("key {}", i)); }

ArchiveProvenance TestProvenance(std::string toolchain = "slangpy 0.43.1 slang 2026.12") {
  ArchiveProvenance provenance;
  provenance.toolchain = std::move(toolchain);
  provenance.spreplay_version = "0.1.0";
  provenance.created_unix_seconds = 1700000000;
  provenance.host = "testhost";
  provenance.command = "spreplay compile trace.sprt";
  return provenance;
}

KernelMetadata MetadataOf(uint64_t i) {
  KernelMetadata metadata;
  metadata.key = KeyOf(i);
  metadata.call_site = {.module_name = fmt::format("module_{}", i % 7),
                        .function_name = fmt::format("function_{}", i),
                        .call_kind = i % 2 == 0 ? "call" : "bwds",
                        .wrapper_module_name = fmt::format("wrapper_{:08x}", i),
                        .entry_point_name = "compute_main"};
  metadata.manifest = {
      {.digest = Sha256Of(fmt::format("dep a {}", i)), .recorded_path = "/a.slang"},
      {.digest = Sha256Of("dep b"), .recorded_path = "/lib/b.slang"}};
  metadata.session_digest = Sha256Of(fmt::format("session {}", i % 3));
  metadata.program_digest = Sha256Of(fmt::format("program {}", i));
  metadata.sass_arches = {75, 80, 86, 89, 90, 100, 120};
  metadata.ptx_arch = 75;
  return metadata;
}

// A fatbin, a PTX and two cubins of sizes that do not divide evenly into the alignment.
std::vector<KernelBinary> BinariesOf(uint64_t i, size_t base_size = 1000) {
  std::vector<KernelBinary> binaries;
  binaries.push_back({.kind = schema::BlobKind::FATBIN,
                      .arch = 0,
                      .bytes = PatternBytes(i * 4 + 0, base_size + i % 300)});
  binaries.push_back(
      {.kind = schema::BlobKind::PTX, .arch = 75, .bytes = PatternBytes(i * 4 + 1, 333)});
  binaries.push_back(
      {.kind = schema::BlobKind::CUBIN, .arch = 80, .bytes = PatternBytes(i * 4 + 2, 17)});
  binaries.push_back(
      {.kind = schema::BlobKind::CUBIN, .arch = 90, .bytes = PatternBytes(i * 4 + 3, 256)});
  return binaries;
}

std::string_view AsView(capnp::Text::Reader text) { return {text.begin(), text.size()}; }

std::span<const std::byte> AsBytes(const std::string& bytes) {
  return std::as_bytes(std::span(bytes.data(), bytes.size()));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A scratch directory per test, removed afterwards.
class ArchiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "archive_test_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string PathOf(std::string_view name) const { return dir_ + "/" + std::string(name); }

  std::vector<std::string> DirectoryEntries() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  // Writes kernels first .. first + count - 1 and returns the file's bytes.
  std::string WriteArchive(const std::string& path, uint64_t first, uint64_t count,
                           std::string toolchain = "slangpy 0.43.1 slang 2026.12") {
    ArchiveWriter writer(TestProvenance(std::move(toolchain)));
    for (uint64_t i = first; i < first + count; ++i) {
      EXPECT_TRUE(writer.Add(MetadataOf(i), BinariesOf(i)).ok());
    }
    const absl::Status status = writer.Write(path);
    EXPECT_TRUE(status.ok()) << status;
    return ReadFile(path);
  }

  std::string dir_;
};

ArchiveHeader HeaderOf(const std::string& bytes) { return DecodeArchiveHeader(AsBytes(bytes)); }

void PatchHeader(std::string& bytes, const ArchiveHeader& header) {
  const auto encoded = EncodeArchiveHeader(header);
  std::memcpy(bytes.data(), encoded.data(), encoded.size());
}

// Re-serialises a valid archive's index after `edit` changes it, with a fresh checksum, so tests
// can present the reader with indexes that pass the CRC but break the format's rules.
std::string WithEditedIndex(const std::string& bytes,
                            const std::function<void(schema::ArchiveIndex::Builder)>& edit) {
  const ArchiveHeader header = HeaderOf(bytes);
  std::vector<capnp::word> words(header.index_size / sizeof(capnp::word));
  std::memcpy(words.data(), bytes.data() + header.index_offset, header.index_size);
  capnp::FlatArrayMessageReader reader(kj::ArrayPtr<const capnp::word>(words.data(), words.size()));
  capnp::MallocMessageBuilder message;
  message.setRoot(reader.getRoot<schema::ArchiveIndex>());
  edit(message.getRoot<schema::ArchiveIndex>());
  const kj::Array<capnp::word> index = capnp::messageToFlatArray(message);
  const auto index_bytes = index.asBytes();

  std::string out = bytes.substr(0, header.index_offset);
  out.append(reinterpret_cast<const char*>(index_bytes.begin()), index_bytes.size());
  ArchiveHeader patched = header;
  patched.index_size = index_bytes.size();
  patched.index_crc32c = Crc32c(std::as_bytes(std::span(index_bytes.begin(), index_bytes.size())));
  patched.file_size = out.size();
  PatchHeader(out, patched);
  return out;
}

absl::Status OpenStatus(const std::string& bytes, std::string_view name = "test.spra") {
  return Archive::Open(AsBytes(bytes), name).status();
}

// ---------------------------------------------------------------------------------------------
// Round trip

TEST_F(ArchiveTest, RoundTripPreservesEveryFieldAndBlob) {
  const std::string path = PathOf("app.spra");
  WriteArchive(path, 0, 5);

  absl::StatusOr<Archive> archive = Archive::Open(path);
  ASSERT_TRUE(archive.ok()) << archive.status();
  EXPECT_EQ(archive->kernel_count(), 5u);
  EXPECT_EQ(archive->header().format_version, kArchiveFormatVersion);
  EXPECT_EQ(archive->header().file_size, std::filesystem::file_size(path));
  EXPECT_EQ(archive->source_name(), path);

  const auto index = archive->index();
  EXPECT_EQ(index.getFormatVersion(), kArchiveFormatVersion);
  EXPECT_EQ(AsView(index.getToolchain()), "slangpy 0.43.1 slang 2026.12");
  EXPECT_EQ(AsView(index.getSpreplayVersion()), "0.1.0");
  EXPECT_EQ(index.getCreation().getCreatedUnixSeconds(), 1700000000);
  EXPECT_EQ(AsView(index.getCreation().getHost()), "testhost");
  EXPECT_EQ(AsView(index.getCreation().getCommand()), "spreplay compile trace.sprt");

  for (uint64_t i = 0; i < 5; ++i) {
    SCOPED_TRACE(i);
    const KernelMetadata expected = MetadataOf(i);
    const std::optional<ArchivedKernel> kernel = archive->Find(expected.key);
    ASSERT_TRUE(kernel.has_value());
    const auto entry = kernel->entry;
    EXPECT_EQ(HexOf(entry.getKey()), expected.key.ToHex());
    const auto call_site = entry.getCallSite();
    EXPECT_EQ(AsView(call_site.getModuleName()), expected.call_site.module_name);
    EXPECT_EQ(AsView(call_site.getFunctionName()), expected.call_site.function_name);
    EXPECT_EQ(AsView(call_site.getCallKind()), expected.call_site.call_kind);
    EXPECT_EQ(AsView(call_site.getWrapperModuleName()), expected.call_site.wrapper_module_name);
    EXPECT_EQ(AsView(call_site.getEntryPointName()), "compute_main");
    ASSERT_EQ(entry.getManifest().size(), 2u);
    EXPECT_EQ(HexOf(entry.getManifest()[0].getDigest()), expected.manifest[0].digest.ToHex());
    EXPECT_EQ(AsView(entry.getManifest()[1].getPath()), "/lib/b.slang");
    EXPECT_EQ(HexOf(entry.getSessionDigest()), expected.session_digest.ToHex());
    EXPECT_EQ(HexOf(entry.getProgramDigest()), expected.program_digest.ToHex());
    std::vector<uint32_t> arches;
    for (const uint32_t arch : entry.getSassArches()) arches.push_back(arch);
    EXPECT_THAT(arches, ElementsAre(75, 80, 86, 89, 90, 100, 120));
    EXPECT_EQ(entry.getPtxArch(), 75u);

    for (const KernelBinary& binary : BinariesOf(i)) {
      absl::StatusOr<std::span<const std::byte>> blob =
          archive->Blob(*kernel, binary.kind, binary.arch);
      ASSERT_TRUE(blob.ok()) << blob.status();
      ASSERT_EQ(blob->size(), binary.bytes.size());
      EXPECT_EQ(std::memcmp(blob->data(), binary.bytes.data(), blob->size()), 0);
      // Zero-copy: the view points into the mapping, at a 256-byte aligned address.
      EXPECT_EQ(reinterpret_cast<uintptr_t>(blob->data()) % kArchiveBlobAlignment, 0u);
      EXPECT_GE(blob->data(), archive->bytes().data());
      EXPECT_LE(blob->data() + blob->size(), archive->bytes().data() + archive->bytes().size());
    }
    for (const auto blob : entry.getBlobs()) {
      EXPECT_EQ(blob.getOffset() % kArchiveBlobAlignment, 0u);
      EXPECT_EQ(blob.getSha256().size(), 32u);
    }
  }
}

TEST_F(ArchiveTest, IndexIsOneSegmentAtTheEnd) {
  const std::string bytes = WriteArchive(PathOf("a.spra"), 0, 200);
  const ArchiveHeader header = HeaderOf(bytes);
  EXPECT_EQ(header.index_offset % kArchiveIndexAlignment, 0u);
  EXPECT_EQ(header.index_offset + header.index_size, bytes.size());
  // A flat message starts with its segment count minus one; one segment means no far pointers.
  uint32_t segments_minus_one = 0xffffffff;
  std::memcpy(&segments_minus_one, bytes.data() + header.index_offset, 4);
  EXPECT_EQ(segments_minus_one, 0u);
}

TEST_F(ArchiveTest, IndexIsSortedByKeyWhateverTheOrderOfAdds) {
  ArchiveWriter writer(TestProvenance());
  for (uint64_t i : {9, 3, 7, 1, 5}) ASSERT_TRUE(writer.Add(MetadataOf(i), BinariesOf(i)).ok());
  ASSERT_TRUE(writer.Write(PathOf("a.spra")).ok());
  absl::StatusOr<Archive> archive = Archive::Open(PathOf("a.spra"));
  ASSERT_TRUE(archive.ok()) << archive.status();
  ASSERT_EQ(archive->kernel_count(), 5u);
  for (size_t i = 1; i < archive->kernel_count(); ++i) {
    EXPECT_LT(HexOf(archive->kernel(i - 1).entry.getKey()),
              HexOf(archive->kernel(i).entry.getKey()));
  }
}

TEST_F(ArchiveTest, EmptyArchiveOpensAndFindsNothing) {
  ArchiveWriter writer(TestProvenance());
  ASSERT_TRUE(writer.Write(PathOf("empty.spra")).ok());
  absl::StatusOr<Archive> archive = Archive::Open(PathOf("empty.spra"));
  ASSERT_TRUE(archive.ok()) << archive.status();
  EXPECT_EQ(archive->kernel_count(), 0u);
  EXPECT_FALSE(archive->Find(KeyOf(0)).has_value());
}

TEST_F(ArchiveTest, OpensFromAnUnalignedBuffer) {
  const std::string bytes = WriteArchive(PathOf("a.spra"), 0, 3);
  std::string shifted = " " + bytes;
  absl::StatusOr<Archive> archive = Archive::Open(AsBytes(shifted).subspan(1), "shifted buffer");
  ASSERT_TRUE(archive.ok()) << archive.status();
  const std::optional<ArchivedKernel> kernel = archive->Find(KeyOf(2));
  ASSERT_TRUE(kernel.has_value());
  absl::StatusOr<std::span<const std::byte>> fatbin =
      archive->Blob(*kernel, schema::BlobKind::FATBIN);
  ASSERT_TRUE(fatbin.ok()) << fatbin.status();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(fatbin->data()) % kArchiveBlobAlignment, 0u);
}

TEST_F(ArchiveTest, ArchiveStaysUsableAfterMove) {
  WriteArchive(PathOf("a.spra"), 0, 3);
  absl::StatusOr<Archive> opened = Archive::Open(PathOf("a.spra"));
  ASSERT_TRUE(opened.ok());
  const std::optional<ArchivedKernel> kernel = opened->Find(KeyOf(1));
  ASSERT_TRUE(kernel.has_value());
  Archive moved = *std::move(opened);
  EXPECT_TRUE(moved.Blob(*kernel, schema::BlobKind::FATBIN).ok());
  EXPECT_TRUE(moved.Find(KeyOf(2)).has_value());
}

// ---------------------------------------------------------------------------------------------
// Lookup

TEST_F(ArchiveTest, TenThousandKernelsLookupHitsAndMisses) {
  constexpr uint64_t kCount = 10000;
  ArchiveWriter writer(TestProvenance());
  for (uint64_t i = 0; i < kCount; ++i) {
    KernelMetadata metadata = MetadataOf(i);
    metadata.manifest.clear();
    std::vector<KernelBinary> binaries;
    binaries.push_back({.kind = schema::BlobKind::FATBIN, .arch = 0, .bytes = PatternBytes(i, 24)});
    ASSERT_TRUE(writer.Add(std::move(metadata), std::move(binaries)).ok());
  }
  ASSERT_TRUE(writer.Write(PathOf("big.spra")).ok());
  absl::StatusOr<Archive> archive = Archive::Open(PathOf("big.spra"));
  ASSERT_TRUE(archive.ok()) << archive.status();
  ASSERT_EQ(archive->kernel_count(), kCount);

  for (uint64_t i = 0; i < kCount; ++i) {
    const std::optional<ArchivedKernel> kernel = archive->Find(KeyOf(i));
    ASSERT_TRUE(kernel.has_value()) << i;
    ASSERT_EQ(AsView(kernel->entry.getCallSite().getFunctionName()), fmt::format("function_{}", i));
    ASSERT_EQ(archive->kernel(kernel->position).entry.getKey(), kernel->entry.getKey());
  }
  for (uint64_t i = kCount; i < 2 * kCount; ++i) {
    ASSERT_FALSE(archive->Find(KeyOf(i)).has_value()) << i;
  }
  // Keys below the first and above the last exercise both ends of the search.
  Digest lowest;
  Digest highest;
  highest.bytes.fill(0xff);
  EXPECT_FALSE(archive->Find(lowest).has_value());
  EXPECT_FALSE(archive->Find(highest).has_value());
  // A key differing from a present one only in its last byte.
  Digest near = KeyOf(42);
  near.bytes.back() ^= 1;
  EXPECT_FALSE(archive->Find(near).has_value());
}

// ---------------------------------------------------------------------------------------------
// Writer rules

TEST_F(ArchiveTest, DuplicateKeyKeepsTheLastKernelAdded) {
  ArchiveWriter writer(TestProvenance());
  KernelMetadata first = MetadataOf(1);
  first.call_site.function_name = "first";
  KernelMetadata second = MetadataOf(1);
  second.call_site.function_name = "second";
  ASSERT_TRUE(writer.Add(first, BinariesOf(1)).ok());
  ASSERT_TRUE(writer.Add(second, BinariesOf(2)).ok());
  EXPECT_EQ(writer.kernel_count(), 1u);
  ASSERT_TRUE(writer.Write(PathOf("a.spra")).ok());

  absl::StatusOr<Archive> archive = Archive::Open(PathOf("a.spra"));
  ASSERT_TRUE(archive.ok());
  ASSERT_EQ(archive->kernel_count(), 1u);
  const std::optional<ArchivedKernel> kernel = archive->Find(KeyOf(1));
  ASSERT_TRUE(kernel.has_value());
  EXPECT_EQ(AsView(kernel->entry.getCallSite().getFunctionName()), "second");
  absl::StatusOr<std::span<const std::byte>> fatbin =
      archive->Blob(*kernel, schema::BlobKind::FATBIN);
  ASSERT_TRUE(fatbin.ok());
  EXPECT_EQ(fatbin->size(), BinariesOf(2)[0].bytes.size());
}

TEST_F(ArchiveTest, IdenticalBlobsAreStoredOnce) {
  ArchiveWriter writer(TestProvenance());
  const std::vector<std::byte> shared = PatternBytes(99, 5000);
  for (uint64_t i = 0; i < 3; ++i) {
    std::vector<KernelBinary> binaries;
    binaries.push_back({.kind = schema::BlobKind::FATBIN, .arch = 0, .bytes = shared});
    ASSERT_TRUE(writer.Add(MetadataOf(i), std::move(binaries)).ok());
  }
  ASSERT_TRUE(writer.Write(PathOf("a.spra")).ok());
  absl::StatusOr<Archive> archive = Archive::Open(PathOf("a.spra"));
  ASSERT_TRUE(archive.ok());
  std::set<uint64_t> offsets;
  for (size_t i = 0; i < archive->kernel_count(); ++i) {
    offsets.insert(archive->kernel(i).entry.getBlobs()[0].getOffset());
    absl::StatusOr<std::span<const std::byte>> fatbin =
        archive->Blob(archive->kernel(i), schema::BlobKind::FATBIN);
    ASSERT_TRUE(fatbin.ok());
    EXPECT_EQ(std::memcmp(fatbin->data(), shared.data(), shared.size()), 0);
  }
  EXPECT_EQ(offsets.size(), 1u);
  EXPECT_LT(std::filesystem::file_size(PathOf("a.spra")), 2 * shared.size());
}

TEST_F(ArchiveTest, WriterRejectsKernelsTheRuntimeCouldNotServe) {
  ArchiveWriter writer(TestProvenance());
  auto add = [&](std::vector<KernelBinary> binaries) {
    return writer.Add(MetadataOf(0), std::move(binaries));
  };
  const auto blob = [](schema::BlobKind kind, uint32_t arch, size_t size = 8) {
    return KernelBinary{.kind = kind, .arch = arch, .bytes = PatternBytes(arch, size)};
  };
  using K = schema::BlobKind;
  EXPECT_THAT(add({}).message(), HasSubstr("0 fatbins"));
  EXPECT_THAT(add({blob(K::PTX, 75)}).message(), HasSubstr("0 fatbins"));
  EXPECT_THAT(add({blob(K::FATBIN, 0), blob(K::FATBIN, 0)}).message(), HasSubstr("two fatbin"));
  EXPECT_THAT(add({blob(K::FATBIN, 80)}).message(), HasSubstr("arch 0"));
  EXPECT_THAT(add({blob(K::FATBIN, 0, 0)}).message(), HasSubstr("empty"));
  EXPECT_THAT(add({blob(K::FATBIN, 0), blob(K::UNSPECIFIED, 1)}).message(),
              HasSubstr("unspecified"));
  EXPECT_THAT(add({blob(K::FATBIN, 0), blob(K::CUBIN, 80), blob(K::CUBIN, 80)}).message(),
              HasSubstr("two cubin blobs for arch 80"));
  EXPECT_EQ(writer.kernel_count(), 0u);
}

// ---------------------------------------------------------------------------------------------
// Blobs

TEST_F(ArchiveTest, BlobErrorsForMissingKindsAndForeignHandles) {
  WriteArchive(PathOf("a.spra"), 0, 2);
  absl::StatusOr<Archive> archive = Archive::Open(PathOf("a.spra"));
  ASSERT_TRUE(archive.ok());
  const std::optional<ArchivedKernel> kernel = archive->Find(KeyOf(0));
  ASSERT_TRUE(kernel.has_value());
  const absl::Status missing = archive->Blob(*kernel, schema::BlobKind::CUBIN, 120).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), AllOf(HasSubstr(KeyOf(0).ToHex()), HasSubstr("arch 120")));

  ArchivedKernel foreign = *kernel;
  foreign.position = 17;
  EXPECT_EQ(archive->Blob(foreign, schema::BlobKind::FATBIN).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ArchiveTest, CorruptBlobFailsOnlyWhenThatBlobIsUsed) {
  std::string bytes = WriteArchive(PathOf("a.spra"), 0, 3);
  absl::StatusOr<Archive> pristine = Archive::Open(AsBytes(bytes), "pristine");
  ASSERT_TRUE(pristine.ok());
  const std::optional<ArchivedKernel> victim = pristine->Find(KeyOf(1));
  ASSERT_TRUE(victim.has_value());
  const auto victim_fatbin = victim->entry.getBlobs()[0];
  ASSERT_EQ(victim_fatbin.getKind(), schema::BlobKind::FATBIN);
  bytes[victim_fatbin.getOffset() + victim_fatbin.getSize() / 2] ^= 0x10;
  WriteFile(PathOf("damaged.spra"), bytes);

  absl::StatusOr<Archive> archive = Archive::Open(PathOf("damaged.spra"));
  ASSERT_TRUE(archive.ok()) << archive.status();
  const std::optional<ArchivedKernel> kernel = archive->Find(KeyOf(1));
  ASSERT_TRUE(kernel.has_value());
  for (int attempt = 0; attempt < 2; ++attempt) {
    const absl::Status status = archive->Blob(*kernel, schema::BlobKind::FATBIN).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(status.message(),
                AllOf(HasSubstr(KeyOf(1).ToHex()), HasSubstr(PathOf("damaged.spra")),
                      HasSubstr("checksum"), HasSubstr("spreplay compile")));
  }
  // The same kernel's other blobs, and other kernels, are unaffected.
  EXPECT_TRUE(archive->Blob(*kernel, schema::BlobKind::PTX, 75).ok());
  EXPECT_TRUE(archive->Blob(*kernel, schema::BlobKind::CUBIN, 80).ok());
  for (uint64_t i : {0, 2}) {
    const std::optional<ArchivedKernel> other = archive->Find(KeyOf(i));
    ASSERT_TRUE(other.has_value());
    EXPECT_TRUE(archive->Blob(*other, schema::BlobKind::FATBIN).ok());
  }
}

TEST_F(ArchiveTest, ConcurrentFirstUsesOfABlobAgree) {
  std::string bytes = WriteArchive(PathOf("a.spra"), 0, 4);
  absl::StatusOr<Archive> probe = Archive::Open(AsBytes(bytes), "probe");
  ASSERT_TRUE(probe.ok());
  const auto bad = probe->Find(KeyOf(3))->entry.getBlobs()[0];
  bytes[bad.getOffset()] ^= 1;
  absl::StatusOr<Archive> archive = Archive::Open(AsBytes(bytes), "shared");
  ASSERT_TRUE(archive.ok());

  std::atomic<int> good_ok{0};
  std::atomic<int> bad_failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (uint64_t i = 0; i < 4; ++i) {
        const std::optional<ArchivedKernel> kernel = archive->Find(KeyOf(i));
        const bool ok = archive->Blob(*kernel, schema::BlobKind::FATBIN).ok();
        if (i == 3) {
          bad_failed += !ok;
        } else {
          good_ok += ok;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(good_ok.load(), 8 * 3);
  EXPECT_EQ(bad_failed.load(), 8);
}

// ---------------------------------------------------------------------------------------------
// Damaged and foreign files

TEST_F(ArchiveTest, TruncatedFilesAreReportedAsTruncated) {
  const std::string bytes = WriteArchive(PathOf("a.spra"), 0, 3);
  const ArchiveHeader header = HeaderOf(bytes);
  const std::vector<size_t> lengths = {1,
                                       4,
                                       7,
                                       8,
                                       63,
                                       64,
                                       200,
                                       kArchiveBlobAlignment + 10,
                                       header.index_offset,
                                       header.index_offset + 8,
                                       bytes.size() - 8,
                                       bytes.size() - 1};
  for (const size_t length : lengths) {
    SCOPED_TRACE(length);
    const std::string path = PathOf(fmt::format("cut_{}.spra", length));
    WriteFile(path, std::string_view(bytes).substr(0, length));
    const absl::Status status = Archive::Open(path).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(status.message(),
                AllOf(HasSubstr(path), HasSubstr("truncated"), HasSubstr("spreplay compile")));
  }
}

TEST_F(ArchiveTest, EmptyFileIsReportedAsEmpty) {
  WriteFile(PathOf("empty.spra"), "");
  const absl::Status status = Archive::Open(PathOf("empty.spra")).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), AllOf(HasSubstr(PathOf("empty.spra")), HasSubstr("empty"),
                                      HasSubstr("spreplay compile")));
  EXPECT_EQ(OpenStatus("").code(), absl::StatusCode::kDataLoss);
}

TEST_F(ArchiveTest, FlippedIndexByteFailsTheChecksum) {
  const std::string bytes = WriteArchive(PathOf("a.spra"), 0, 3);
  const ArchiveHeader header = HeaderOf(bytes);
  for (uint64_t at :
       {header.index_offset, header.index_offset + header.index_size / 2, header.file_size - 1}) {
    SCOPED_TRACE(at);
    std::string damaged = bytes;
    damaged[at] ^= 0x01;
    const absl::Status status = OpenStatus(damaged, "flipped.spra");
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(status.message(), AllOf(HasSubstr("flipped.spra"), HasSubstr("checksum"),
                                        HasSubstr("spreplay compile")));
  }
}

TEST_F(ArchiveTest, ForeignFilesAreNotArchives) {
  for (const std::string& foreign :
       {std::string("hello, world: this is plainly not a kernel archive at all"),
        std::string("SPRTRACE\x01\0\0\0\0\0\0\0", 16),
        std::string("\x7f"
                    "ELF"),
        std::string(100, '\0')}) {
    const absl::Status status = OpenStatus(foreign, "foreign.bin");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(),
                AllOf(HasSubstr("foreign.bin"), HasSubstr("not a spreplay kernel archive")));
  }
}

TEST_F(ArchiveTest, MissingFileAndDirectory) {
  EXPECT_EQ(Archive::Open(PathOf("absent.spra")).status().code(), absl::StatusCode::kNotFound);
  const absl::Status directory = Archive::Open(dir_).status();
  EXPECT_EQ(directory.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(directory.message(), HasSubstr("not a regular file"));
}

TEST_F(ArchiveTest, OlderFormatVersionAsksForANewCompile) {
  std::string bytes = WriteArchive(PathOf("a.spra"), 0, 1);
  ArchiveHeader header = HeaderOf(bytes);
  header.format_version = kArchiveFormatVersion - 1;
  PatchHeader(bytes, header);
  WriteFile(PathOf("past.spra"), bytes);
  const absl::Status status = Archive::Open(PathOf("past.spra")).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr(PathOf("past.spra")), HasSubstr("written by an older spreplay"),
                    HasSubstr(fmt::format("archive format {}", kArchiveFormatVersion - 1)),
                    HasSubstr("spreplay compile")));
}

TEST_F(ArchiveTest, NewerFormatVersionAsksForANewerSpreplay) {
  std::string bytes = WriteArchive(PathOf("a.spra"), 0, 1);
  ArchiveHeader header = HeaderOf(bytes);
  header.format_version = kArchiveFormatVersion + 1;
  PatchHeader(bytes, header);
  WriteFile(PathOf("future.spra"), bytes);
  const absl::Status status = Archive::Open(PathOf("future.spra")).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr(PathOf("future.spra")), HasSubstr("written by a newer spreplay"),
                    HasSubstr(fmt::format("format {}", kArchiveFormatVersion + 1))));
}

TEST_F(ArchiveTest, InconsistentHeadersAreDamaged) {
  const std::string bytes = WriteArchive(PathOf("a.spra"), 0, 2);
  const ArchiveHeader good = HeaderOf(bytes);
  const std::vector<std::function<void(ArchiveHeader&)>> breakages = {
      [](ArchiveHeader& h) { h.format_version = 0; },
      [](ArchiveHeader& h) { h.header_size = 8; },
      [](ArchiveHeader& h) { h.header_size = 1u << 31; },
      [](ArchiveHeader& h) { h.index_offset = ~uint64_t{0} - 7; },
      [](ArchiveHeader& h) { h.index_offset = 8; },
      [](ArchiveHeader& h) { h.index_offset += 4; },
      [](ArchiveHeader& h) { h.index_size = ~uint64_t{0} - 7; },
      [](ArchiveHeader& h) { h.index_size = 0; },
      [](ArchiveHeader& h) { h.index_size += 8; },
      [](ArchiveHeader& h) { h.file_size -= 8; },
  };
  for (size_t i = 0; i < breakages.size(); ++i) {
    SCOPED_TRACE(i);
    std::string damaged = bytes;
    ArchiveHeader header = good;
    breakages[i](header);
    PatchHeader(damaged, header);
    const absl::Status status = OpenStatus(damaged, "damaged.spra");
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(status.message(), AllOf(HasSubstr("damaged.spra"), HasSubstr("spreplay compile")));
  }
  std::string appended = bytes + std::string(8, 'x');
  EXPECT_EQ(OpenStatus(appended).code(), absl::StatusCode::kDataLoss);
}

TEST_F(ArchiveTest, IndexesBreakingTheFormatRulesAreRejected) {
  const std::string bytes = WriteArchive(PathOf("a.spra"), 0, 3);
  ASSERT_TRUE(OpenStatus(WithEditedIndex(bytes, [](auto) {})).ok());

  const std::vector<std::pair<std::string, std::function<void(schema::ArchiveIndex::Builder)>>>
      cases = {
          {"out of key order",
           [](schema::ArchiveIndex::Builder index) {
             Digest highest;
             highest.bytes.fill(0xff);
             index.getEntries()[0].setKey(
                 capnp::Data::Reader(highest.bytes.data(), highest.bytes.size()));
           }},
          {"key",
           [](schema::ArchiveIndex::Builder index) {
             index.getEntries()[1].setKey(capnp::Data::Reader(KeyOf(0).bytes.data(), 31));
           }},
          {"outside the blob region",
           [](schema::ArchiveIndex::Builder index) {
             index.getEntries()[0].getBlobs()[0].setSize(uint64_t{1} << 40);
           }},
          {"outside the blob region",
           [](schema::ArchiveIndex::Builder index) {
             index.getEntries()[0].getBlobs()[0].setOffset(~uint64_t{0} - 255);
           }},
          {"outside the blob region",
           [](schema::ArchiveIndex::Builder index) {
             index.getEntries()[2].getBlobs()[1].setOffset(
                 index.getEntries()[2].getBlobs()[1].getOffset() + 8);
           }},
          {"outside the blob region",
           [](schema::ArchiveIndex::Builder index) {
             index.getEntries()[2].getBlobs()[1].setOffset(0);
           }},
          {"header says format 2 but its index says 7",
           [](schema::ArchiveIndex::Builder index) { index.setFormatVersion(7); }},
          {"session digest",
           [](schema::ArchiveIndex::Builder index) {
             index.getEntries()[0].setSessionDigest(capnp::Data::Reader(KeyOf(0).bytes.data(), 5));
           }},
      };
  for (const auto& [expected, edit] : cases) {
    SCOPED_TRACE(expected);
    const absl::Status status = OpenStatus(WithEditedIndex(bytes, edit), "edited.spra");
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(status.message(), AllOf(HasSubstr("edited.spra"), HasSubstr(expected),
                                        HasSubstr("spreplay compile")));
  }
}

TEST_F(ArchiveTest, MalformedIndexMessagesAreRejectedWithoutCrashing) {
  const std::string bytes = WriteArchive(PathOf("a.spra"), 0, 3);
  const ArchiveHeader header = HeaderOf(bytes);
  std::mt19937_64 random(7);
  int rejected = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string damaged = bytes;
    // Scribble over a few index bytes, then make the checksum agree so the parser sees them.
    for (int k = 0; k < 1 + trial % 4; ++k) {
      damaged[header.index_offset + random() % header.index_size] = static_cast<char>(random());
    }
    ArchiveHeader patched = header;
    patched.index_crc32c = Crc32c(AsBytes(damaged).subspan(header.index_offset, header.index_size));
    PatchHeader(damaged, patched);
    absl::StatusOr<Archive> archive = Archive::Open(AsBytes(damaged), "scribbled.spra");
    if (!archive.ok()) {
      ++rejected;
      EXPECT_EQ(archive.status().code(), absl::StatusCode::kDataLoss) << archive.status();
      EXPECT_THAT(archive.status().message(), HasSubstr("scribbled.spra"));
      continue;
    }
    // Whatever survived validation must be safe to use throughout.
    for (size_t i = 0; i < archive->kernel_count(); ++i) {
      const ArchivedKernel kernel = archive->kernel(i);
      for (const auto blob : kernel.entry.getBlobs()) {
        (void)archive->Blob(kernel, blob.getKind(), blob.getArch());
      }
    }
    (void)DescribeArchive(*archive, false);
    (void)DescribeArchive(*archive, true);
  }
  EXPECT_GT(rejected, 0);
}

TEST_F(ArchiveTest, UnknownBlobKindsFromNewerWritersAreSkipped) {
  const std::string bytes = WriteArchive(PathOf("a.spra"), 0, 1);
  const std::string edited = WithEditedIndex(bytes, [](schema::ArchiveIndex::Builder index) {
    index.getEntries()[0].getBlobs()[3].setKind(static_cast<schema::BlobKind>(42));
  });
  absl::StatusOr<Archive> archive = Archive::Open(AsBytes(edited), "newer.spra");
  ASSERT_TRUE(archive.ok()) << archive.status();
  const ArchivedKernel kernel = archive->kernel(0);
  EXPECT_TRUE(archive->Blob(kernel, schema::BlobKind::FATBIN).ok());
  EXPECT_EQ(archive->Blob(kernel, schema::BlobKind::CUBIN, 90).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_THAT(DescribeArchive(*archive, true), HasSubstr("\"kind\": \"kind-42\""));
}

// ---------------------------------------------------------------------------------------------
// Atomic publication

TEST_F(ArchiveTest, FailedWriteLeavesThePreviousArchiveAndNoTemporaryFile) {
  const std::string path = PathOf("app.spra");
  const std::string original = WriteArchive(path, 0, 3);

  // Fail mid-write for real: in a child process, cap the file size so writing B's blobs runs
  // into EFBIG, as a full disk would.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const struct rlimit limit = {.rlim_cur = 64 * 1024, .rlim_max = 64 * 1024};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    ArchiveWriter writer(TestProvenance("toolchain B"));
    std::vector<KernelBinary> binaries;
    binaries.push_back(
        {.kind = schema::BlobKind::FATBIN, .arch = 0, .bytes = PatternBytes(5, 1 << 20)});
    (void)writer.Add(MetadataOf(100), std::move(binaries));
    const absl::Status status = writer.Write(path);
    _exit(!status.ok() && status.message().find(path) != std::string_view::npos ? 0 : 1);
  }
  int wait_status = 0;
  ASSERT_EQ(::waitpid(child, &wait_status, 0), child);
  ASSERT_TRUE(WIFEXITED(wait_status));
  EXPECT_EQ(WEXITSTATUS(wait_status), 0) << "the capped write should have failed";

  EXPECT_EQ(ReadFile(path), original);
  EXPECT_THAT(DirectoryEntries(), ElementsAre("app.spra"));
  EXPECT_TRUE(Archive::Open(path).ok());
}

TEST_F(ArchiveTest, FailedRenameRemovesTheTemporaryFile) {
  // The destination is a non-empty directory, so everything succeeds up to the rename.
  std::filesystem::create_directory(PathOf("taken"));
  WriteFile(PathOf("taken/keep"), "x");
  ArchiveWriter writer(TestProvenance());
  ASSERT_TRUE(writer.Add(MetadataOf(0), BinariesOf(0)).ok());
  const absl::Status status = writer.Write(PathOf("taken"));
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(PathOf("taken")));
  EXPECT_THAT(DirectoryEntries(), ElementsAre("taken"));
}

TEST_F(ArchiveTest, WriteIntoMissingDirectoryFails) {
  ArchiveWriter writer(TestProvenance());
  const absl::Status status = writer.Write(PathOf("no/such/dir/app.spra"));
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("no/such/dir"));
  EXPECT_TRUE(DirectoryEntries().empty());
}

TEST_F(ArchiveTest, ConcurrentThreadsWritingOnePathLeaveOneWholeArchive) {
  const std::string path = PathOf("app.spra");
  const std::string a = WriteArchive(PathOf("reference_a"), 0, 4, "toolchain A");
  const std::string b = WriteArchive(PathOf("reference_b"), 10, 6, "toolchain B");
  std::filesystem::remove(PathOf("reference_a"));
  std::filesystem::remove(PathOf("reference_b"));

  std::atomic<bool> writing{true};
  std::atomic<int> torn_reads{0};
  std::thread reader([&] {
    while (writing.load()) {
      const std::string seen = ReadFile(path);
      if (!seen.empty() && seen != a && seen != b) ++torn_reads;
    }
  });
  std::vector<std::thread> writers;
  for (const uint64_t first : {uint64_t{0}, uint64_t{10}}) {
    writers.emplace_back([&, first] {
      ArchiveWriter writer(TestProvenance(first == 0 ? "toolchain A" : "toolchain B"));
      for (uint64_t i = first; i < first + (first == 0 ? 4 : 6); ++i) {
        (void)writer.Add(MetadataOf(i), BinariesOf(i));
      }
      for (int round = 0; round < 20; ++round) EXPECT_TRUE(writer.Write(path).ok());
    });
  }
  for (std::thread& writer : writers) writer.join();
  writing = false;
  reader.join();

  EXPECT_EQ(torn_reads.load(), 0);
  const std::string result = ReadFile(path);
  EXPECT_TRUE(result == a || result == b);
  EXPECT_TRUE(Archive::Open(path).ok());
  EXPECT_THAT(DirectoryEntries(), ElementsAre("app.spra"));
}

TEST_F(ArchiveTest, ConcurrentProcessesWritingOnePathLeaveOneWholeArchive) {
  const std::string path = PathOf("app.spra");
  const std::string a = WriteArchive(PathOf("reference_a"), 0, 4, "toolchain A");
  const std::string b = WriteArchive(PathOf("reference_b"), 10, 6, "toolchain B");
  std::filesystem::remove(PathOf("reference_a"));
  std::filesystem::remove(PathOf("reference_b"));

  std::vector<pid_t> children;
  for (const uint64_t first : {uint64_t{0}, uint64_t{10}}) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ArchiveWriter writer(TestProvenance(first == 0 ? "toolchain A" : "toolchain B"));
      for (uint64_t i = first; i < first + (first == 0 ? 4 : 6); ++i) {
        (void)writer.Add(MetadataOf(i), BinariesOf(i));
      }
      int failures = 0;
      for (int round = 0; round < 30; ++round) failures += !writer.Write(path).ok();
      _exit(failures);
    }
    children.push_back(child);
  }
  // Readers open the live path while the writers race, as the runtime would.
  int opened = 0;
  for (int remaining = static_cast<int>(children.size()); remaining > 0;) {
    absl::StatusOr<Archive> archive = Archive::Open(path);
    if (archive.ok()) {
      ++opened;
      const auto toolchain = AsView(archive->index().getToolchain());
      EXPECT_TRUE(toolchain == "toolchain A" || toolchain == "toolchain B");
      EXPECT_EQ(archive->kernel_count(), toolchain == "toolchain A" ? 4u : 6u);
    } else {
      EXPECT_EQ(archive.status().code(), absl::StatusCode::kNotFound) << archive.status();
    }
    int wait_status = 0;
    for (pid_t& child : children) {
      if (child > 0 && ::waitpid(child, &wait_status, WNOHANG) == child) {
        EXPECT_TRUE(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0);
        child = 0;
        --remaining;
      }
    }
  }
  const std::string result = ReadFile(path);
  EXPECT_TRUE(result == a || result == b);
  EXPECT_THAT(DirectoryEntries(), ElementsAre("app.spra"));
  EXPECT_GT(opened, 0);
}

// ---------------------------------------------------------------------------------------------
// inspect

TEST_F(ArchiveTest, DescribeAsTableShowsEveryKernelAndASummary) {
  WriteArchive(PathOf("app.spra"), 0, 3);
  absl::StatusOr<Archive> archive = Archive::Open(PathOf("app.spra"));
  ASSERT_TRUE(archive.ok());
  const std::string table = DescribeArchive(*archive, /*json=*/false);
  EXPECT_THAT(table, AllOf(HasSubstr("KEY"), HasSubstr("MODULE"), HasSubstr("FUNCTION")));
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_THAT(table, AllOf(HasSubstr(KeyOf(i).ToHex().substr(0, 12)),
                             HasSubstr(fmt::format("function_{}", i))));
  }
  EXPECT_THAT(table, AllOf(HasSubstr("75,80,86,89,90,100,120"), HasSubstr("bwds"),
                           HasSubstr("3 kernels"), HasSubstr("slangpy 0.43.1 slang 2026.12"),
                           HasSubstr(fmt::format("archive format {}", kArchiveFormatVersion))));
  EXPECT_EQ(table.back(), '\n');
}

TEST_F(ArchiveTest, DescribeAsJsonEscapesHostileText) {
  ArchiveWriter writer(TestProvenance("tool \"chain\"\n\\"));
  KernelMetadata metadata = MetadataOf(0);
  metadata.call_site.function_name = std::string("f\x01\xff\xc3\xa9", 5);
  ASSERT_TRUE(writer.Add(std::move(metadata), BinariesOf(0)).ok());
  ASSERT_TRUE(writer.Write(PathOf("app.spra")).ok());
  absl::StatusOr<Archive> archive = Archive::Open(PathOf("app.spra"));
  ASSERT_TRUE(archive.ok());

  const std::string json = DescribeArchive(*archive, /*json=*/true);
  EXPECT_THAT(json, AllOf(HasSubstr(R"("toolchain": "tool \"chain\"\n\\")"),
                          HasSubstr("\"function\": \"f\\u0001\xEF\xBF\xBD\xC3\xA9\""),
                          HasSubstr(fmt::format("\"key\": \"{}\"", KeyOf(0).ToHex())),
                          HasSubstr("\"kind\": \"fatbin\""), HasSubstr("\"kernelCount\": 1")));
  const std::string table = DescribeArchive(*archive, /*json=*/false);
  EXPECT_EQ(table.find('\x01'), std::string::npos);
}

}  // namespace
}  // namespace spreplay
