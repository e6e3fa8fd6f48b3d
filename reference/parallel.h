// The parallel loops of the project's CPU work: the oracles, the input generators, and the
// judge's sets (made and checked side by side) and output comparisons. Results never depend
// on the thread count: each item writes only what it owns.
//
// A loop started inside another loop's worker shares that loop's threads: with n workers
// on T threads, each worker's own loops get T / n of them (at least one). The judge makes a
// window's sets side by side, one worker each, and every set's generator and oracle has
// parallel loops of its own. Before, each of them started a pool of all T threads (16 x 16
// threads on a 16-core machine, every thread a fresh stack mapping); now 14 sets run one
// thread each, and the two sets of a long kernel's short window get half the machine each.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace fp4arena {

namespace parallel_detail {
/// The threads a loop started on this thread may use: 0 outside every loop (the machine's),
/// else this worker's share of its loop's.
inline thread_local int share = 0;

inline int available() {
  if (share > 0) return share;
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  return hw > 0 ? hw : 1;
}
}  // namespace parallel_detail

/// `threads`, or every thread available here where it is <= 0 (the machine's outside every
/// loop, a worker's share inside one), at least 1.
inline int ResolveThreads(int threads) {
  return threads > 0 ? threads : parallel_detail::available();
}

/// Runs body(item) for item in [0, items) on up to `threads` threads (the caller included),
/// items handed out one at a time; inside another loop's worker on at most that worker's
/// share of the threads.
template <typename Body>
void ParallelFor(int threads, size_t items, const Body& body) {
  const int outer = parallel_detail::share;
  const int cap = outer > 0 ? std::min(std::max(threads, 1), outer) : std::max(threads, 1);
  const int n = static_cast<int>(std::min(static_cast<size_t>(cap), items));
  if (n <= 1) {
    for (size_t item = 0; item < items; ++item) body(item);
    return;
  }
  const int each = std::max(1, std::max(parallel_detail::available(), n) / n);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    const int before = parallel_detail::share;
    parallel_detail::share = each;
    for (size_t item; (item = next.fetch_add(1)) < items;) body(item);
    parallel_detail::share = before;
  };
  std::vector<std::thread> pool;
  pool.reserve(size_t(n - 1));
  for (int t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
}

/// Calls fn(begin, end) on contiguous chunks of [0, n), one chunk a thread, from up to
/// `threads` threads (0: every thread available here), chunks of at least 64 indices.
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
