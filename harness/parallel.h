// A minimal parallel-for over an index range, for the judge's CPU-side loops (input
// generation, validation). Results never depend on the thread count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace fp4arena {

/// Calls fn(begin, end) on contiguous chunks of [0, n) from up to `threads` threads
/// (0: hardware concurrency). fn must only write state owned by its own chunk.
template <typename Fn>
void parallel_for(int64_t n, Fn fn, int threads = 0) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int64_t chunks = std::min<int64_t>(threads, std::max<int64_t>(1, n / 64));
  if (chunks <= 1) {
    fn(int64_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  int64_t step = (n + chunks - 1) / chunks;
  for (int64_t b = 0; b < n; b += step) {
    int64_t e = std::min(n, b + step);
    pool.emplace_back([=] { fn(b, e); });
  }
  for (auto& t : pool) t.join();
}

}  // namespace fp4arena
