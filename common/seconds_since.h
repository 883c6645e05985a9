#pragma once
// Elapsed wall time on the monotonic clock, for reports of how long steps took.

#include <chrono>

namespace spreplay {

inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace spreplay
