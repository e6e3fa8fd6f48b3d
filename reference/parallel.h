// The parallel loops of the project's CPU work: the oracles, the input generators, and the
// judge's sets (made and checked side by side) and output comparisons. Results never depend
// on the thread count: each item writes only what it owns.
//
// A loop started inside another loop's worker runs on that worker's thread alone. The judge
// makes a window's sets side by side, one worker each, and every set's generator and oracle
// has parallel loops of its own: before, each of them started a full pool of its own there
// (16 x 16 threads on a 16-core machine), every thread a fresh stack mapping, where one
// thread per set was all the machine could run.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace fp4arena {

namespace parallel_detail {
/// True on a thread while it runs a worker of a ParallelFor of more than one thread.
inline thread_local bool in_worker = false;
}  // namespace parallel_detail

/// `threads`, or std::thread::hardware_concurrency() where it is <= 0, at least 1.
inline int ResolveThreads(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  return threads > 0 ? threads : 1;
}

/// Runs body(item) for item in [0, items) on up to `threads` threads (the caller included),
/// items handed out one at a time; on the calling thread alone inside another loop's worker.
template <typename Body>
void ParallelFor(int threads, size_t items, const Body& body) {
  const size_t want = parallel_detail::in_worker ? 1 : static_cast<size_t>(std::max(threads, 1));
  const int n = static_cast<int>(std::min(want, items));
  if (n <= 1) {
    for (size_t item = 0; item < items; ++item) body(item);
    return;
  }
  std::atomic<size_t> next{0};
  auto worker = [&] {
    const bool outer = parallel_detail::in_worker;
    parallel_detail::in_worker = true;
    for (size_t item; (item = next.fetch_add(1)) < items;) body(item);
    parallel_detail::in_worker = outer;
  };
  std::vector<std::thread> pool;
  pool.reserve(size_t(n - 1));
  for (int t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
}

/// Calls fn(begin, end) on contiguous chunks of [0, n), one chunk a thread, from up to
/// `threads` threads (0: hardware concurrency), chunks of at least 64 indices.
template <typename Fn>
void parallel_for(int64_t n, Fn fn, int threads = 0) {
  const int64_t chunks = std::min<int64_t>(ResolveThreads(threads), std::max<int64_t>(1, n / 64));
  const int64_t step = (n + chunks - 1) / std::max<int64_t>(chunks, 1);
  if (chunks <= 1 || step <= 0) {
    fn(int64_t{0}, n);
    return;
  }
  const int64_t count = (n + step - 1) / step;
  ParallelFor(static_cast<int>(count), size_t(count), [&](size_t c) {
    const int64_t b = int64_t(c) * step;
    fn(b, std::min(n, b + step));
  });
}

}  // namespace fp4arena
