// CombineParts: a session configuration verified in several sessions (parts)
// archives a module once, only if every part that decided it passed it, and
// only with its imports, whichever part decided them. ProgramsPerSession:
// how many sessions a configuration is split into. Decide: what a part's
// evidence says of its modules, under the configuration's kernel modules.

#include "compiler/module_parts.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/sha256.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spreplay {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

Digest KeyOf(const std::string& name) { return Sha256Of(name); }

std::pair<ModuleMetadata, std::string> Archived(const std::string& name,
                                                std::vector<std::string> imports = {}) {
  ModuleMetadata metadata;
  metadata.key = KeyOf(name);
  metadata.name = name;
  for (const std::string& imported : imports) metadata.imports.push_back(KeyOf(imported));
  return {metadata, "IR of " + name};
}

std::pair<Digest, UnservedModule> Refused(const std::string& name) {
  return {KeyOf(name), UnservedModule{Digest{}, name, "its rebuild over IR differs"}};
}

std::vector<std::string> ArchivedNames(const GroupOutcome& outcome) {
  std::vector<std::string> names;
  for (const auto& [metadata, ir] : outcome.archived) names.push_back(metadata.name);
  return names;
}

TEST(CombinePartsTest, AModuleImportingOneAnotherPartArchivedIsArchived) {
  PartitionOutcome kernels;
  kernels.archived = {Archived("slangpy"), Archived("app", {"slangpy"})};
  PartitionOutcome unused_modules;  // decides only the module no kernel used
  unused_modules.archived = {Archived("helpers", {"slangpy"})};

  const GroupOutcome outcome = CombineParts({kernels, unused_modules});
  EXPECT_THAT(ArchivedNames(outcome), UnorderedElementsAre("slangpy", "app", "helpers"));
  EXPECT_TRUE(outcome.refused.empty());
}

TEST(CombinePartsTest, AModuleWhoseImportAnotherPartRefusedIsRefusedAndSoIsWhatImportsIt) {
  PartitionOutcome first;
  first.refused = {Refused("slangpy")};
  PartitionOutcome second;
  second.archived = {Archived("slangpy"), Archived("helpers", {"slangpy"}),
                     Archived("app", {"helpers"}), Archived("alone")};

  const GroupOutcome outcome = CombineParts({first, second});
  EXPECT_THAT(ArchivedNames(outcome), ElementsAre("alone"));
  ASSERT_EQ(outcome.refused.size(), 3u);
  EXPECT_EQ(outcome.refused[0].name, "slangpy");
  EXPECT_THAT(
      outcome.refused,
      testing::Contains(AllOf(
          Field(&UnservedModule::name, "helpers"),
          Field(&UnservedModule::reason, HasSubstr("imports 'slangpy', which is not archived")))));
  EXPECT_THAT(
      outcome.refused,
      testing::Contains(AllOf(
          Field(&UnservedModule::name, "app"),
          Field(&UnservedModule::reason, HasSubstr("imports 'helpers', which is not archived")))));
}

TEST(CombinePartsTest, AModuleWhoseImportNoPartDecidedIsRefused) {
  PartitionOutcome unused_modules;
  unused_modules.archived = {Archived("helpers", {"slangpy"})};

  const GroupOutcome outcome = CombineParts({unused_modules});
  EXPECT_TRUE(outcome.archived.empty());
  ASSERT_EQ(outcome.refused.size(), 1u);
  EXPECT_THAT(outcome.refused[0].reason, HasSubstr("which is not archived"));
}

TEST(ProgramsPerSessionTest, AConfigurationOfAFewDozenProgramsIsOneSession) {
  EXPECT_EQ(ProgramsPerSession(30, {.workers = 16}), 30u);
  EXPECT_EQ(ProgramsPerSession(2 * kProgramsWorthASession - 1, {.workers = 16}),
            2 * kProgramsWorthASession - 1);
  EXPECT_EQ(ProgramsPerSession(1, {.workers = 16}), 1u);
  EXPECT_EQ(ProgramsPerSession(0, {.workers = 16}), 1u);  // SplitIntoParts steps by it
}

TEST(ProgramsPerSessionTest, AConfigurationOfHundredsIsSplitEvenlyIntoSessionsWorthTheirCost) {
  // slangpy's suite: 704 programs of one configuration, on 16 jobs.
  EXPECT_EQ(ProgramsPerSession(704, {.workers = 16}), 64u);  // 11 sessions
  EXPECT_EQ(ProgramsPerSession(2 * kProgramsWorthASession, {.workers = 16}),
            kProgramsWorthASession);
  EXPECT_EQ(ProgramsPerSession(2 * kProgramsWorthASession + 1, {.workers = 16}),
            kProgramsWorthASession + 1);
}

TEST(ProgramsPerSessionTest, NoMoreSessionsThanWorkers) {
  EXPECT_EQ(ProgramsPerSession(704, {.workers = 2}), 352u);
  EXPECT_EQ(ProgramsPerSession(705, {.workers = 2}), 353u);
  EXPECT_EQ(ProgramsPerSession(704, {.workers = 1}), 704u);
  EXPECT_EQ(ProgramsPerSession(704, {.workers = 0}), 704u);
}

TEST(ProgramsPerSessionTest, TheUsersChoiceWins) {
  EXPECT_EQ(ProgramsPerSession(704, {.programs_per_session = 44, .workers = 2}), 44u);
  EXPECT_EQ(ProgramsPerSession(30, {.programs_per_session = 1, .workers = 1}), 1u);
  EXPECT_EQ(ProgramsPerSession(704, {.programs_per_session = SIZE_MAX, .workers = 16}), 704u);
}

}  // namespace
}  // namespace spreplay

namespace spreplay {
namespace {

// Four kernels of one configuration, all built from one library file; the
// app took `seconds[i]` to compile kernel i.
struct FourKernels {
  Snapshot snapshot;
  std::vector<KernelRecord> records;
  GroupWork work;

  explicit FourKernels(std::vector<double> seconds) : records(seconds.size()) {
    snapshot.AddFile("/lib/slangpy.slang", "the library");
    for (size_t i = 0; i < seconds.size(); ++i) {
      records[i].compile_seconds = seconds[i];
      work.programs.push_back(
          {Component::Module(fmt::format("call_site_{}", i), "", "", "import slangpy;", {}),
           &snapshot, 0, 0});
      work.records.push_back(&records[i]);
    }
  }

  std::vector<std::vector<size_t>> Parts(const SessionSize& size) {
    std::vector<PartWork> parts;
    const std::vector<size_t> all = {0, 1, 2, 3};
    SplitIntoParts(work, all, 0, size, parts);
    std::vector<std::vector<size_t>> indices;
    for (const PartWork& part : parts) indices.push_back(part.indices);
    return indices;
  }
};

TEST(SplitIntoPartsTest, AKernelThatLeadsTheNextByMoreThanAWorkersShareGetsASessionOfItsOwn) {
  FourKernels kernels({0.3, 5.0, 0.4, 0.2});
  EXPECT_THAT(kernels.Parts({.workers = 16, .own_session_seconds = 5.9 / 16}),
              ElementsAre(ElementsAre(1u), ElementsAre(0u, 2u, 3u)));
}

TEST(SplitIntoPartsTest, AKernelThatLeadsTheNextByLessThanAWorkersShareStaysInTheSet) {
  // Kernel 2's chain waits for the whole set's modules and ends about when
  // kernel 1's would: a session of its own would cost CPU for nothing.
  FourKernels close({0.3, 5.0, 4.8, 0.2});
  EXPECT_THAT(close.Parts({.workers = 16, .own_session_seconds = 10.3 / 16}),
              ElementsAre(ElementsAre(0u, 1u, 2u, 3u)));
  FourKernels ahead({0.3, 5.0, 4.2, 0.2});
  EXPECT_THAT(ahead.Parts({.workers = 16, .own_session_seconds = 9.7 / 16}),
              ElementsAre(ElementsAre(1u), ElementsAre(0u, 2u, 3u)));
}

TEST(SplitIntoPartsTest, NoKernelLongerThanAWorkersShareLeavesOneSession) {
  FourKernels even({1.0, 1.2, 1.1, 0.9});
  EXPECT_THAT(even.Parts({.workers = 2, .own_session_seconds = 4.2 / 2}),
              ElementsAre(ElementsAre(0u, 1u, 2u, 3u)));
  FourKernels kernels({0.3, 5.0, 0.4, 0.2});
  EXPECT_THAT(kernels.Parts({.workers = 1}), ElementsAre(ElementsAre(0u, 1u, 2u, 3u)));
}

TEST(SplitIntoPartsTest, TheUsersSessionSizeIsKept) {
  FourKernels kernels({0.3, 5.0, 0.4, 0.2});
  EXPECT_THAT(kernels.Parts({.programs_per_session = 4, .workers = 16, .own_session_seconds = 0.4}),
              ElementsAre(ElementsAre(0u, 1u, 2u, 3u)));
}

}  // namespace
}  // namespace spreplay

namespace spreplay {
namespace {

// A part of one configuration: slangpy's library; `helpers`, which the
// part's kernel is built with; and `noise`, which no kernel is, proven by
// its layout alone, and `util`, which only `noise` imports.
struct PartWithAModuleNoKernelUsed {
  static constexpr size_t kSlangpy = 0, kHelpers = 1, kUtil = 2, kNoise = 3;
  static constexpr size_t kKernel = 0, kNoiseLayout = 1;
  PartEvidence evidence;

  explicit PartWithAModuleNoKernelUsed(std::string noise_layout_failure) {
    for (const char* name : {"slangpy", "helpers", "util", "noise"}) {
      PartEvidence::Module& module = evidence.modules.emplace_back();
      module.metadata.key = KeyOf(name);
      module.metadata.name = name;
      module.node = {KeyOf(name), name};
    }
    evidence.modules[kHelpers].imports = {kSlangpy};
    evidence.modules[kUtil].imports = {kSlangpy};
    evidence.modules[kNoise].imports = {kSlangpy, kUtil};
    evidence.programs.push_back({true, false, "", {kSlangpy, kHelpers}});
    evidence.programs.push_back(
        {false, false, std::move(noise_layout_failure), {kSlangpy, kUtil, kNoise}});
  }

  static absl::flat_hash_set<ModuleNodeKey> Kernels(std::vector<std::string> names) {
    absl::flat_hash_set<ModuleNodeKey> modules;
    for (const std::string& name : names) modules.insert({KeyOf(name), name});
    return modules;
  }

  PartitionOutcome Decide(const absl::flat_hash_set<ModuleNodeKey>& kernel_modules) const {
    return spreplay::Decide(evidence, kernel_modules, [&](size_t module) {
      return "IR of " + evidence.modules[module].metadata.name;
    });
  }
};

std::vector<std::string> ArchivedNames(const PartitionOutcome& outcome) {
  std::vector<std::string> names;
  for (const auto& [metadata, ir] : outcome.archived) names.push_back(metadata.name);
  return names;
}

std::vector<std::string> RefusedNames(const PartitionOutcome& outcome) {
  std::vector<std::string> names;
  for (const auto& [key, module] : outcome.refused) names.push_back(module.name);
  return names;
}

TEST(DecideTest, AModulesLayoutDecidesItAndWhatOnlyItUses) {
  PartWithAModuleNoKernelUsed part("");
  const PartitionOutcome outcome = part.Decide(part.Kernels({"slangpy", "helpers"}));
  EXPECT_THAT(ArchivedNames(outcome), ElementsAre("slangpy", "helpers", "util", "noise"));
  EXPECT_EQ(outcome.archived[1].first.verified_by, schema::ModuleVerification::KERNELS);
  EXPECT_EQ(outcome.archived[3].first.verified_by, schema::ModuleVerification::LAYOUT);
  EXPECT_EQ(outcome.archived[3].second, "IR of noise");
}

TEST(DecideTest, AFailingLayoutRefusesWhatOnlyLayoutsDecideButNoKernelsModule) {
  PartWithAModuleNoKernelUsed part("module 'noise' rebuilt over IR: its layout differs");
  const PartitionOutcome outcome = part.Decide(part.Kernels({"slangpy", "helpers"}));
  EXPECT_THAT(ArchivedNames(outcome), ElementsAre("slangpy", "helpers"));
  EXPECT_THAT(RefusedNames(outcome), ElementsAre("util", "noise"));
  EXPECT_THAT(outcome.refused[0].second.reason, HasSubstr("its layout differs"));
}

// The call site an app adds is built with `noise`: its kernel's part decides
// `noise` and `util`, and the part decided again without noise's layout
// refuses neither, as a compile that verified it without that layout would.
TEST(DecideTest, AModuleAKernelIsNowBuiltWithIsLeftToThatKernel) {
  PartWithAModuleNoKernelUsed part("module 'noise' rebuilt over IR: its layout differs");
  part.evidence.programs[PartWithAModuleNoKernelUsed::kNoiseLayout].left_out = true;
  const PartitionOutcome outcome =
      part.Decide(part.Kernels({"slangpy", "helpers", "util", "noise"}));
  EXPECT_THAT(ArchivedNames(outcome), ElementsAre("slangpy", "helpers"));
  EXPECT_THAT(RefusedNames(outcome), ::testing::IsEmpty());

  PartitionOutcome without_it;
  part.evidence.programs.pop_back();
  without_it = part.Decide(part.Kernels({"slangpy", "helpers", "util", "noise"}));
  EXPECT_THAT(ArchivedNames(without_it), ElementsAre("slangpy", "helpers"));
}

TEST(DecideTest, AModuleThatImportsARefusedOneIsRefused) {
  PartWithAModuleNoKernelUsed part("");
  part.evidence.modules[PartWithAModuleNoKernelUsed::kUtil].refusal = "it loads from source only";
  const PartitionOutcome outcome = part.Decide(part.Kernels({"slangpy", "helpers"}));
  EXPECT_THAT(ArchivedNames(outcome), ElementsAre("slangpy", "helpers"));
  EXPECT_THAT(RefusedNames(outcome), ElementsAre("util", "noise"));
  EXPECT_EQ(outcome.refused[1].second.reason, "it imports 'util', which is not archived");
}

TEST(DecideTest, AKernelThatDidNotCompileCountsForNothing) {
  PartWithAModuleNoKernelUsed part("");
  part.evidence.programs[PartWithAModuleNoKernelUsed::kKernel].failure = "PTX differs";
  part.evidence.programs[PartWithAModuleNoKernelUsed::kKernel].left_out = true;
  const PartitionOutcome outcome = part.Decide(part.Kernels({"slangpy", "helpers"}));
  EXPECT_THAT(ArchivedNames(outcome), ElementsAre("util", "noise"));
  EXPECT_THAT(RefusedNames(outcome), ::testing::IsEmpty());
}

}  // namespace
}  // namespace spreplay
