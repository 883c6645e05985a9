#include "compiler/ptx_comparison.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spreplay {
namespace {

using ::testing::HasSubstr;

constexpr const char* kRecorded =
    "//\n.version 9.0\n.target sm_75\n\t.file\t1 \"/app/dir/2f9c\"\n"
    "\t.file\t2 \"/usr/local/cuda/targets/x86_64-linux/include/cuda_fp16.hpp\"\n"
    "\tadd.f32 %f1, %f2, %f3;\n";

TEST(PtxComparisonTest, IdenticalTextsAgree) {
  EXPECT_EQ(DescribePtxDifference(kRecorded, kRecorded), "");
}

TEST(PtxComparisonTest, FileDirectivesMayNameAnotherPathForTheSameFileNumber) {
  const char* replayed =
      "//\n.version 9.0\n.target sm_75\n\t.file\t1 \"/app/dir/2f9c\"\n"
      "\t.file\t2 \"/usr/local/cuda/include/cuda_fp16.hpp\"\n"
      "\tadd.f32 %f1, %f2, %f3;\n";
  EXPECT_EQ(DescribePtxDifference(kRecorded, replayed), "");
}

TEST(PtxComparisonTest, AnotherFileNumberDiffers) {
  const char* replayed =
      "//\n.version 9.0\n.target sm_75\n\t.file\t1 \"/app/dir/2f9c\"\n"
      "\t.file\t3 \"/usr/local/cuda/include/cuda_fp16.hpp\"\n"
      "\tadd.f32 %f1, %f2, %f3;\n";
  EXPECT_THAT(DescribePtxDifference(kRecorded, replayed), HasSubstr("at line 5"));
}

TEST(PtxComparisonTest, CodeDiffersEvenWhenPathsDoToo) {
  const char* replayed =
      "//\n.version 9.0\n.target sm_75\n\t.file\t1 \"/other/2f9c\"\n"
      "\t.file\t2 \"/usr/local/cuda/include/cuda_fp16.hpp\"\n"
      "\tsub.f32 %f1, %f2, %f3;\n";
  const std::string difference = DescribePtxDifference(kRecorded, replayed);
  EXPECT_THAT(difference, HasSubstr("at line 6"));
  EXPECT_THAT(difference, HasSubstr("sub.f32"));
}

TEST(PtxComparisonTest, PathsOutsideFileDirectivesDiffer) {
  // -G puts the compilation directory into the DWARF bytes: never ignored.
  const std::string recorded = std::string(kRecorded) + ".b8 47,97,112,112\n";
  const std::string replayed = std::string(kRecorded) + ".b8 47,111,116,104\n";
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
