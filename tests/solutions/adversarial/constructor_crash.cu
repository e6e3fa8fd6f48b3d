// Broken: a static constructor raises SIGSEGV when the worker loads the solution. That is
// the solution's crash (exit code 4, verdict `crashed` naming the load), not the judge's.
#include <cuda_fp16.h>

#include <csignal>
#include <cstdint>

extern "C" __attribute__((constructor, used)) void fp4arena_fixture_crash_on_load() {
  std::raise(SIGSEGV);
}

extern "C" void solve(const uint8_t*, const uint8_t*, const uint8_t*, const uint8_t*, float,
                      __half*, int, int, int) {}
