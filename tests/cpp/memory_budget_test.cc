// How many Slang sessions a compile holds at once, its workers' and beside
// them, from the memory the machine, or the process's cgroup, leaves it.

#include "compiler/memory_budget.h"

#include "gtest/gtest.h"

namespace spreplay {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(SlangSessionsAtOnceTest, EnoughMemoryLimitsNothing) {
  EXPECT_EQ(SlangSessionsAtOnce(16, 128 * kGiB), 16u);
  EXPECT_EQ(SlangSessionsAtOnce(2, 24 * kGiB), 2u);  // the 2-core CI machine
  EXPECT_EQ(SlangSessionsAtOnce(16, std::nullopt), 16u);
}

TEST(SlangSessionsAtOnceTest, LittleMemoryHoldsFewerSessionsThanJobs) {
  EXPECT_EQ(SlangSessionsAtOnce(64, 8 * kGiB + kGiB / 2), 8u);
  EXPECT_EQ(SlangSessionsAtOnce(16, kGiB / 4), 1u);  // one at least
  EXPECT_EQ(SlangSessionsAtOnce(0, 8 * kGiB), 1u);
}

TEST(SessionsBesideTest, WhatMemoryHoldsBeyondTheWorkersSessions) {
  EXPECT_EQ(SessionsBeside(2, 24 * kGiB), 2u);  // the 2-core CI machine
  EXPECT_EQ(SessionsBeside(16, 20 * kGiB), 4u);
  EXPECT_EQ(SessionsBeside(16, std::nullopt), 16u);
}

TEST(SessionsBesideTest, NoneWhereMemoryBoundsTheWorkers) {
  // 64 jobs, 8.5 GiB: 8 sessions, and no room for another.
  EXPECT_EQ(SessionsBeside(SlangSessionsAtOnce(64, 8 * kGiB + kGiB / 2), 8 * kGiB + kGiB / 2), 0u);
  EXPECT_EQ(SessionsBeside(1, kGiB / 4), 0u);
}

TEST(MemAvailableOfTest, ReadsTheKernelsEstimateInBytes) {
  EXPECT_EQ(MemAvailableOf("MemTotal:       24576000 kB\nMemFree:  1000 kB\n"
                           "MemAvailable:   20480000 kB\nBuffers: 0 kB\n"),
            uint64_t{20480000} * 1024);
  EXPECT_EQ(MemAvailableOf("MemTotal: 24576000 kB\n"), std::nullopt);  // kernels before 3.14
  EXPECT_EQ(MemAvailableOf("MemAvailable: lots\n"), std::nullopt);
}

TEST(CgroupHeadroomTest, ALimitLeavesItsUnusedPart) {
  EXPECT_EQ(CgroupHeadroom("8589934592\n", "2147483648\n"), 6 * kGiB);
  EXPECT_EQ(CgroupHeadroom("1073741824\n", "2147483648\n"), 0u);  // over, reclaiming
}

TEST(CgroupHeadroomTest, NoLimitIsNoHeadroomToHeed) {
  EXPECT_EQ(CgroupHeadroom("max\n", "2147483648\n"), std::nullopt);            // v2
  EXPECT_EQ(CgroupHeadroom("9223372036854771712\n", "4096\n"), std::nullopt);  // v1
  EXPECT_EQ(CgroupHeadroom("", ""), std::nullopt);
}

TEST(AvailableMemoryBytesTest, ThisMachineHasSome) {
  const std::optional<uint64_t> available = AvailableMemoryBytes();
  ASSERT_TRUE(available.has_value());  // Linux has had MemAvailable since 3.14
  EXPECT_GT(*available, uint64_t{0});
}

}  // namespace
}  // namespace spreplay
