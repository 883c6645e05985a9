#include "archive/archive_merge.h"

#include <filesystem>
#include <string>
#include <vector>

#include "archive/archive.h"
#include "archive/archive_writer.h"
#include "common/capnp_digest.h"
#include "compiler/scratch_dir.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spreplay {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr const char* kToolchain = "slangpy 0.43.1 slang 2026.12";
const Digest kSession = Sha256Of("session");

ArchiveProvenance Provenance(std::string toolchain = kToolchain) {
  ArchiveProvenance provenance;
  provenance.toolchain = std::move(toolchain);
  provenance.spreplay_version = "0.1.0";
  provenance.command = "spreplay compile trace.capnp";
  return provenance;
}

void AddKernel(ArchiveWriter& writer, int i) {
  KernelMetadata metadata;
  metadata.key = Sha256Of(fmt::format("kernel {}", i));
  metadata.call_site = {"app.slang", fmt::format("f{}", i), "call", "wrapper", "compute_main"};
  metadata.session_digest = kSession;
  metadata.program_digest = Sha256Of(fmt::format("program {}", i));
  metadata.sass_arches = {90};
  metadata.ptx_arch = 75;
  std::vector<KernelBinary> binaries;
  binaries.push_back({schema::BlobKind::FATBIN, 0, {std::byte(i), std::byte(1)}});
  binaries.push_back({schema::BlobKind::PTX, 75, {std::byte(i), std::byte(2)}});
  ASSERT_TRUE(writer.Add(std::move(metadata), std::move(binaries)).ok());
}

// A module of the session named `name`, importing `imports`.
ModuleMetadata Module(const std::string& name, std::vector<Digest> imports = {}) {
  ModuleMetadata metadata;
  metadata.key = Sha256Of("module " + name);
  metadata.content_digest = Sha256Of("content " + name);
  metadata.session_digest = kSession;
  metadata.name = name;
  metadata.requested_name = name;
  metadata.file_path = {Digest{}, schema::PathRoot::SEARCH_PATH, 0, name + ".slang",
                        "/app/" + name + ".slang"};
  metadata.files = {{Sha256Of("file " + name), schema::PathRoot::SEARCH_PATH, 0, name + ".slang",
                     "/app/" + name + ".slang"}};
  metadata.imports = std::move(imports);
  return metadata;
}

std::vector<std::string> ModuleNames(const Archive& archive) {
  std::vector<std::string> names;
  for (auto module : archive.index().getModules()) names.emplace_back(module.getName().cStr());
  return names;
}

class ArchiveMergeTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_.File(name); }

  // Writes `first` and `second` as two shards' archives and merges them.
  absl::StatusOr<ArchiveMergeSummary> WriteAndMerge(const ArchiveWriter& first,
                                                    const ArchiveWriter& second) {
    if (absl::Status written = first.Write(Path("1.sprk")); !written.ok()) return written;
    if (absl::Status written = second.Write(Path("2.sprk")); !written.ok()) return written;
    return MergeArchives({Path("1.sprk"), Path("2.sprk")}, Path("merged.sprk"));
  }

  ScratchDir dir_ = *ScratchDir::Create("archive_merge_test_");
};

TEST_F(ArchiveMergeTest, JoinsKernelsAndModulesOfEveryShard) {
  ArchiveWriter first(Provenance());
  AddKernel(first, 1);
  first.AddModule(Module("util"), "util IR");
  ArchiveWriter second(Provenance());
  AddKernel(second, 2);
  first.AddModule(Module("app", {Sha256Of("module util")}), "app IR");
  second.AddModule(Module("util"), "util IR");

  absl::StatusOr<ArchiveMergeSummary> merged = WriteAndMerge(first, second);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->kernels, 2u);
  EXPECT_EQ(merged->modules, 2u);
  absl::StatusOr<Archive> archive = Archive::Open(Path("merged.sprk"));
  ASSERT_TRUE(archive.ok()) << archive.status();
  EXPECT_EQ(archive->kernel_count(), 2u);
  EXPECT_THAT(ModuleNames(*archive), UnorderedElementsAre("util", "app"));
  for (size_t i = 0; i < archive->index().getModules().size(); ++i) {
    absl::StatusOr<std::span<const std::byte>> ir = archive->ModuleIr(i);
    ASSERT_TRUE(ir.ok()) << ir.status();
    EXPECT_GT(ir->size(), 0u);
  }
}

TEST_F(ArchiveMergeTest, AModuleOneShardRefusedIsLeftOutWithItsImporters) {
  // Shard 1 verified util and app with its kernels; shard 2 had a kernel built
  // with util that did not rebuild from IR, so one compile would not have
  // archived util, nor app, which imports it.
  ArchiveWriter first(Provenance());
  AddKernel(first, 1);
  first.AddModule(Module("util"), "util IR");
  first.AddModule(Module("app", {Sha256Of("module util")}), "app IR");
  first.AddModule(Module("other"), "other IR");
  ArchiveWriter second(Provenance());
  AddKernel(second, 2);
  second.AddUnservedModule({kSession, "util", "kernel f2 rebuilt over IR: PTX differs"});

  absl::StatusOr<ArchiveMergeSummary> merged = WriteAndMerge(first, second);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->modules_dropped, 2u);
  absl::StatusOr<Archive> archive = Archive::Open(Path("merged.sprk"));
  ASSERT_TRUE(archive.ok()) << archive.status();
  EXPECT_THAT(ModuleNames(*archive), ElementsAre("other"));
  std::vector<std::pair<std::string, std::string>> unserved;
  for (auto module : archive->index().getUnservedModules())
    unserved.emplace_back(module.getName().cStr(), module.getReason().cStr());
  EXPECT_THAT(unserved,
              UnorderedElementsAre(Pair("util", HasSubstr("PTX differs")),
                                   Pair("app", "it imports 'util', which is not archived")));
}

TEST_F(ArchiveMergeTest, RefusesArchivesOfAnotherToolchain) {
  ArchiveWriter first(Provenance());
  AddKernel(first, 1);
  ArchiveWriter second(Provenance("slangpy 0.44.0 slang 2026.13"));
  AddKernel(second, 2);
  absl::StatusOr<ArchiveMergeSummary> merged = WriteAndMerge(first, second);
  ASSERT_FALSE(merged.ok());
  EXPECT_THAT(merged.status().message(), HasSubstr("same slangpy"));
  EXPECT_FALSE(std::filesystem::exists(Path("merged.sprk")));
}

TEST_F(ArchiveMergeTest, ADamagedInputIsNamed) {
  absl::StatusOr<ArchiveMergeSummary> merged =
      MergeArchives({Path("missing.sprk")}, Path("merged.sprk"));
  ASSERT_FALSE(merged.ok());
  EXPECT_THAT(merged.status().message(), HasSubstr("missing.sprk"));
}

}  // namespace
}  // namespace spreplay
