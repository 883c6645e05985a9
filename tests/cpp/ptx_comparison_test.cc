#include "compiler/ptx_comparison.h"

#include <string>

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

}  // namespace
}  // namespace spreplay
