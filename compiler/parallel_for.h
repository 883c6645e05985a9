#pragma once
// Runs fn(item, worker) for item in [0, count) on `workers` threads. Each
// worker index is used by one thread only, so per-worker state (a Slang
// replayer, which is single-threaded) needs no locking.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace spreplay {

template <typename Fn>
void ParallelFor(size_t count, size_t workers, Fn fn) {
  workers = std::max<size_t>(1, std::min(workers, count));
  std::atomic<size_t> next{0};
  auto loop = [&](size_t worker) {
    for (size_t item; (item = next.fetch_add(1)) < count;) fn(item, worker);
  };
  std::vector<std::thread> threads;
  for (size_t worker = 1; worker < workers; ++worker) threads.emplace_back(loop, worker);
  loop(0);
  for (std::thread& thread : threads) thread.join();
}

}  // namespace spreplay
