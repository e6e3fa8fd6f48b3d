// reference/parallel.h: every index once, and a loop inside another loop's worker on that
// worker's share of the threads.
#include "reference/parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace fp4arena {
namespace {

TEST(Parallel, EveryIndexOnceWhateverTheThreadCount) {
  for (int64_t n : {0, 1, 63, 64, 65, 1000, 4099}) {
    for (int threads : {1, 2, 3, 8}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
      parallel_for(
          n,
          [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) seen[size_t(i)]++;
          },
          threads);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[size_t(i)], 1) << n << " " << threads;
      std::vector<std::atomic<int>> items(static_cast<size_t>(n));
      ParallelFor(threads, size_t(n), [&](size_t i) { items[i]++; });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(items[size_t(i)], 1) << n << " " << threads;
    }
  }
}

TEST(Parallel, ALoopInsideAWorkerOfAFullLoopRunsOnThatWorkersThreadAlone) {
  // As many workers as the machine has threads (two at least): one thread each.
  const int full = std::max(2, ResolveThreads(0));
  std::atomic<int> inner_elsewhere{0}, inner_items{0};
  ParallelFor(full, size_t(full), [&](size_t) {
    const std::thread::id me = std::this_thread::get_id();
    EXPECT_EQ(ResolveThreads(0), 1);
    ParallelFor(8, 64, [&](size_t) {
      inner_items++;
      if (std::this_thread::get_id() != me) inner_elsewhere++;
    });
    parallel_for(
        4096,
        [&](int64_t, int64_t) {
          if (std::this_thread::get_id() != me) inner_elsewhere++;
        },
        8);
  });
  EXPECT_EQ(inner_items, full * 64);
  EXPECT_EQ(inner_elsewhere, 0);
  EXPECT_EQ(parallel_detail::share, 0);  // the caller is itself again
}

TEST(Parallel, AWorkersOwnLoopsGetItsShareOfTheThreads) {
  const int machine = ResolveThreads(0);
  std::atomic<int> wrong{0};
  // Two workers: half the machine's threads each (one at least).
  ParallelFor(2, 2, [&](size_t) {
    if (ResolveThreads(0) != std::max(1, std::max(machine, 2) / 2)) wrong++;
  });
  EXPECT_EQ(wrong, 0);
  // One thread (one set, or a GPU oracle's one stream): the caller keeps the whole machine.
  ParallelFor(1, 3, [&](size_t) {
    if (ResolveThreads(0) != machine) wrong++;
  });
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(parallel_detail::share, 0);
}

}  // namespace
}  // namespace fp4arena
