#include "compiler/ptx_comparison.h"

#include <ostream>
#include <string>
#include <utility>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spreplay {
namespace {

using ::testing::HasSubstr;

// A small PTX text with line information: the wrapper as file 1, a CUDA
// header as file `header_number`, and one instruction.
std::string Ptx(const std::string& wrapper, int header_number, const std::string& header,
                const std::string& instruction) {
  return "//\n.version 9.0\n.target sm_75\n\t.file\t1 \"" + wrapper + "\"\n\t.file\t" +
         std::to_string(header_number) + " \"" + header + "\"\n\t" + instruction + "\n";
}

const std::string kRecorded =
    Ptx("/app/dir/2f9c", 2, "/usr/local/cuda/targets/x86_64-linux/include/cuda_fp16.hpp",
        "add.f32 %f1, %f2, %f3;");
const std::string kOtherHeader = "/usr/local/cuda/include/cuda_fp16.hpp";

TEST(PtxComparisonTest, IdenticalTextsAgree) {
  EXPECT_EQ(DescribePtxDifference(kRecorded, kRecorded), "");
}

TEST(PtxComparisonTest, FileDirectivesMayNameAnotherPathForTheSameFileNumber) {
  const std::string replayed = Ptx("/app/dir/2f9c", 2, kOtherHeader, "add.f32 %f1, %f2, %f3;");
  EXPECT_EQ(DescribePtxDifference(kRecorded, replayed), "");
}

TEST(PtxComparisonTest, AnotherFileNumberDiffers) {
  const std::string replayed = Ptx("/app/dir/2f9c", 3, kOtherHeader, "add.f32 %f1, %f2, %f3;");
  EXPECT_THAT(DescribePtxDifference(kRecorded, replayed), HasSubstr("at line 5"));
}

TEST(PtxComparisonTest, CodeDiffersEvenWhenPathsDoToo) {
  const std::string replayed = Ptx("/other/2f9c", 2, kOtherHeader, "sub.f32 %f1, %f2, %f3;");
  const std::string difference = DescribePtxDifference(kRecorded, replayed);
  EXPECT_THAT(difference, HasSubstr("at line 6"));
  EXPECT_THAT(difference, HasSubstr("sub.f32"));
}

TEST(PtxComparisonTest, PathsOutsideFileDirectivesDiffer) {
  // -G puts the compilation directory into the DWARF bytes: never ignored.
  const std::string recorded = kRecorded + ".b8 47,97,112,112\n";
  const std::string replayed = kRecorded + ".b8 47,111,116,104\n";
  EXPECT_THAT(DescribePtxDifference(recorded, replayed), HasSubstr("at line 7"));
}

TEST(PtxComparisonTest, ATruncatedReplayDiffers) {
  const std::string recorded = kRecorded;
  const std::string replayed = recorded.substr(0, recorded.rfind("\tadd"));
  EXPECT_THAT(DescribePtxDifference(recorded, replayed), HasSubstr("differs"));
  EXPECT_THAT(DescribePtxDifference(replayed, recorded), HasSubstr("differs"));
}

// A kernel as NVRTC writes it: two functions, each declaring its registers.
// `{a}`..`{d}` are %f registers of the entry, `{e}` one of the helper; the
// other placeholders vary one thing of the program itself.
struct Kernel {
  std::string a = "%f1", b = "%f2", c = "%f3", d = "%f4", e = "%f1";
  std::string entry_op = "fma.rn.f32", entry_type = ".f32", immediate = "0f3F800000";
  std::string maxntid = "32", count = "5", thread = "%tid.x", label = "$L__BB0_2";
  std::string index = "%r1";

  std::string Text() const {
    return fmt::format(
        R"(//
.version 9.0
.target sm_75
.address_size 64

.func  (.param .b32 func_retval0) helper(
	.param .b32 helper_param_0
)
{{
	.reg .f32 	%f<3>;

	ld.param.f32 	{e}, [helper_param_0];
	add.f32 	%f2, {e}, 0f3F800000;
	st.param.f32 	[func_retval0], %f2;
	ret;
}}

.visible .entry compute_main(
	.param .u64 compute_main_param_0
)
.maxntid {maxntid}, 1, 1
{{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<3>;
	.reg .f32 	%f<{count}>;
	.reg .b64 	%rd<3>;

	mov.u32 	{index}, {thread};
	setp.gt.u32 	%p1, {index}, 1023;
	@%p1 bra 	{label};
	ld.param.u64 	%rd1, [compute_main_param_0];
	ld.global{entry_type} 	{a}, [%rd1];
	ld.global{entry_type} 	{b}, [%rd1+4];
	mov{entry_type} 	{c}, {immediate};
	{entry_op} 	{d}, {a}, {b}, {c};
	st.global{entry_type} 	[%rd1], {d};
{label}:
	ret;
}}
)",
        fmt::arg("a", a), fmt::arg("b", b), fmt::arg("c", c), fmt::arg("d", d), fmt::arg("e", e),
        fmt::arg("entry_op", entry_op), fmt::arg("entry_type", entry_type),
        fmt::arg("immediate", immediate), fmt::arg("maxntid", maxntid), fmt::arg("count", count),
        fmt::arg("thread", thread), fmt::arg("label", label), fmt::arg("index", index));
  }
};

using Verdict = PtxComparison::Verdict;

TEST(PtxRegisterRenamingTest, TheSameKernelIsIdentical) {
  const PtxComparison comparison = ComparePtx(Kernel().Text(), Kernel().Text());
  EXPECT_EQ(comparison.verdict, Verdict::kIdentical);
}

TEST(PtxRegisterRenamingTest, RegistersNumberedInAnotherOrderAreAccepted) {
  Kernel replayed;
  std::swap(replayed.a, replayed.b);  // %f1 <-> %f2
  replayed.c = "%f4";                 // and %f3 <-> %f4
  replayed.d = "%f3";
  const PtxComparison comparison = ComparePtx(Kernel().Text(), replayed.Text());
  EXPECT_EQ(comparison.verdict, Verdict::kRegistersRenamed) << comparison.difference;
  EXPECT_EQ(comparison.renamed_registers, 4u);
  EXPECT_EQ(DescribePtxDifference(Kernel().Text(), replayed.Text()), "");
}

TEST(PtxRegisterRenamingTest, EachFunctionMayRenameItsOwnRegisters) {
  // %f1 of the helper is %f0 in the replay, while the entry's %f1 stays %f1.
  Kernel replayed;
  replayed.e = "%f0";
  EXPECT_EQ(ComparePtx(Kernel().Text(), replayed.Text()).verdict, Verdict::kRegistersRenamed);
}

TEST(PtxRegisterRenamingTest, RegistersTheRecordingKeepsApartMustStayApart) {
  Kernel replayed;
  replayed.b = "%f1";  // two recorded registers, one replayed
  const PtxComparison comparison = ComparePtx(Kernel().Text(), replayed.Text());
  EXPECT_EQ(comparison.verdict, Verdict::kDifferent);
  EXPECT_THAT(comparison.difference, HasSubstr("replayed %f1 stood for %f1 before"));
}

TEST(PtxRegisterRenamingTest, ARegisterMustBeRenamedTheSameWayEverywhere) {
  Kernel recorded;
  recorded.c = "%f1";  // the recording reuses %f1 where the replay takes %f3
  recorded.d = "%f4";
  const PtxComparison comparison = ComparePtx(recorded.Text(), Kernel().Text());
  EXPECT_EQ(comparison.verdict, Verdict::kDifferent);
  EXPECT_THAT(comparison.difference, HasSubstr("recorded %f1 was %f1 before, here %f3"));
}

TEST(PtxRegisterRenamingTest, ARenamingThatCrossesDeclarationsIsRefused) {
  Kernel replayed;
  replayed.index = "%rd2";  // a b32 register renamed to a b64 one
  EXPECT_THAT(ComparePtx(Kernel().Text(), replayed.Text()).difference,
              HasSubstr("not of the declaration"));
}

TEST(PtxRegisterRenamingTest, ARegisterBeyondItsDeclarationIsNotARegister) {
  Kernel replayed;
  replayed.d = "%f5";  // %f<5> declares %f0 to %f4
  EXPECT_EQ(ComparePtx(Kernel().Text(), replayed.Text()).verdict, Verdict::kDifferent);
}

// One change to the program itself, named for test names and messages.
struct ProgramChange {
  const char* name;
  void (*apply)(Kernel&);
  friend void PrintTo(const ProgramChange& change, std::ostream* out) { *out << change.name; }
};

// Everything but register names is compared byte for byte, renamed or not.
class PtxProgramDifferenceTest : public ::testing::TestWithParam<ProgramChange> {};

TEST_P(PtxProgramDifferenceTest, IsRefusedEvenWithRegistersRenamed) {
  Kernel replayed;
  std::swap(replayed.a, replayed.b);
  GetParam().apply(replayed);
  const PtxComparison comparison = ComparePtx(Kernel().Text(), replayed.Text());
  EXPECT_EQ(comparison.verdict, Verdict::kDifferent);
  EXPECT_THAT(comparison.difference, HasSubstr("PTX differs from the recorded PTX at line"));
}

INSTANTIATE_TEST_SUITE_P(
    Differences, PtxProgramDifferenceTest,
    ::testing::Values(ProgramChange{"instruction", [](Kernel& k) { k.entry_op = "fma.rz.f32"; }},
                      ProgramChange{"type", [](Kernel& k) { k.entry_type = ".f16"; }},
                      ProgramChange{"immediate", [](Kernel& k) { k.immediate = "0f40000000"; }},
                      ProgramChange{"directive", [](Kernel& k) { k.maxntid = "64"; }},
                      ProgramChange{"declaration", [](Kernel& k) { k.count = "6"; }},
                      ProgramChange{"special_register", [](Kernel& k) { k.thread = "%ntid.x"; }},
                      ProgramChange{"label", [](Kernel& k) { k.label = "$L__BB0_3"; }}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(PtxRegisterRenamingTest, OperandsSwappedInOneInstructionAreRefused) {
  const std::string recorded = Kernel().Text();
  std::string replayed = recorded;
  const std::string operands = "%f4, %f1, %f2, %f3;";
  ASSERT_NE(replayed.find(operands), std::string::npos);
  replayed.replace(replayed.find(operands), operands.size(), "%f4, %f2, %f1, %f3;");
  EXPECT_EQ(ComparePtx(recorded, replayed).verdict, Verdict::kDifferent);
}

TEST(PtxRegisterRenamingTest, ALineMoreOrLessIsRefused) {
  const std::string recorded = Kernel().Text();
  std::string replayed = recorded;
  replayed.insert(replayed.find("\tret;"), "\tmov.f32 \t%f1, %f2;\n");
  EXPECT_EQ(ComparePtx(recorded, replayed).verdict, Verdict::kDifferent);
  EXPECT_EQ(ComparePtx(replayed, recorded).verdict, Verdict::kDifferent);
}

}  // namespace
}  // namespace spreplay
