// Broken: a static constructor dereferences null when the worker loads the solution. That is
// the solution's crash (exit code 4, verdict `crashed` naming the load), not the judge's.
#include <cuda_fp16.h>
#include <cstdint>

namespace {
__attribute__((constructor)) void crash_on_load() {
  volatile int* p = nullptr;
  *p = 1;
}
}  // namespace

extern "C" void solve(const uint8_t*, const uint8_t*, const uint8_t*, const uint8_t*, float,
                      __half*, int, int, int) {}
