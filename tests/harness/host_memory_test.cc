// keep_freed_host_memory() (harness/host_memory.h): a block the judge frees is reused by its
// next allocation of that size, from any thread, without the kernel faulting its pages in
// again. Each gtest runs in its own process (gtest_discover_tests), so the setting made here
// reaches no other test.
#include "harness/host_memory.h"

#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace fp4arena {
namespace {

// This process's minor page faults so far.
long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// The page faults of making, filling and freeing a block of `bytes` on a thread of its own, as
// a judge's window makes an input set.
long faults_of_one_block(size_t bytes) {
  long faults = 0;
  std::thread t([&] {
    const long before = minor_faults();
    std::vector<uint8_t> block(bytes, 0x5a);
    volatile uint8_t sink = block[bytes / 2];
    (void)sink;
    faults = minor_faults() - before;
  });
  t.join();
  return faults;
}

// 48 MiB: below the 64 MiB a thread's own glibc arena can hold, so that with the defaults each
// new thread would take the block from an arena of its own (and fault it in again), and above
// the size glibc maps on its own and unmaps when freed.
TEST(HostMemory, AFreedBlockIsReusedByTheNextThreadWithoutPageFaults) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "keep_freed_host_memory() sets glibc's malloc only";
#endif
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator replaces glibc's here";
#endif
  keep_freed_host_memory();
  constexpr size_t kBytes = size_t(48) << 20;
  const long pages = long(kBytes / 4096);
  const long first = faults_of_one_block(kBytes);
  const long second = faults_of_one_block(kBytes);
  const long third = faults_of_one_block(kBytes);
  EXPECT_GT(first, pages / 2) << "the first block was not faulted in at all: is this a test?";
  EXPECT_LT(second, pages / 10) << "first " << first << " faults, second " << second;
  EXPECT_LT(third, pages / 10) << "first " << first << " faults, third " << third;
}

}  // namespace
}  // namespace fp4arena
