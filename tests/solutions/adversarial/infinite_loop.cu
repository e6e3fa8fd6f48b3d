// Cheat (or a deadlock): a kernel that never finishes; it waits for a device flag nobody sets.
// The judge must give `timeout` ("no answer within 3" with --timeout 3), kill the worker, start
// a fresh one for the next case and leave no process behind.
#include "naive_kernel.cuh"

namespace {

__device__ volatile int g_release = 0;  // never set

__global__ void wait_forever() {
  while (g_release == 0) __nanosleep(1000);
}

}  // namespace

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  wait_forever<<<1, 1>>>();
}
