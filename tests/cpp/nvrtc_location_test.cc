// The compile keeps NVRTC out of the driver's compute cache unless the user
// chose otherwise. tests/gpu/hardening.py (compute-cache) proves on a GPU
// that NVRTC then writes nothing there, and fills it when allowed.

#include "replayer/nvrtc_location.h"

#include <cstdlib>
#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace spreplay {
namespace {

std::optional<std::string> CacheDisable() {
  const char* value = std::getenv("CUDA_CACHE_DISABLE");
  return value ? std::optional<std::string>(value) : std::nullopt;
}

// Gives the tests that run after these in the same process the variable as
// they found it.
class KeepNvrtcOutOfComputeCacheTest : public testing::Test {
 protected:
  void TearDown() override {
    if (found_) {
      setenv("CUDA_CACHE_DISABLE", found_->c_str(), /*overwrite=*/1);
    } else {
      unsetenv("CUDA_CACHE_DISABLE");
    }
  }

 private:
  const std::optional<std::string> found_ = CacheDisable();
};

TEST_F(KeepNvrtcOutOfComputeCacheTest, TurnsTheCacheOffWhereTheUserSaidNothing) {
  unsetenv("CUDA_CACHE_DISABLE");
  KeepNvrtcOutOfComputeCache();
  EXPECT_EQ(CacheDisable(), "1");

  setenv("CUDA_CACHE_DISABLE", "", /*overwrite=*/1);
  KeepNvrtcOutOfComputeCache();
  EXPECT_EQ(CacheDisable(), "1");
}

TEST_F(KeepNvrtcOutOfComputeCacheTest, LeavesTheUsersChoice) {
  setenv("CUDA_CACHE_DISABLE", "0", /*overwrite=*/1);
  KeepNvrtcOutOfComputeCache();
  EXPECT_EQ(CacheDisable(), "0");
}

}  // namespace
}  // namespace spreplay
