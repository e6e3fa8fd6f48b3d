// Cheat: launches the real work on a private cudaStreamNonBlocking stream and returns without
// synchronizing, so the judge's events on the default stream time (almost) nothing.
// The judge must give `timing_escape` ("stayed busy ... outside the default stream") whenever
// the kernel outlives 50 us after the stop event: large_k_positive and the benchmarks.
#include "naive_kernel.cuh"

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  static cudaStream_t side = [] {
    cudaStream_t s = nullptr;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    return s;
  }();
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, M, N, K, side);
}
