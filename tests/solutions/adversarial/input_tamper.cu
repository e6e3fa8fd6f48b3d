// Cheat: computes c correctly, then zeroes b_scales (casting away const) on the default stream,
// as a kernel that reuses its inputs as scratch space would. The judge must give
// `input_modified` naming 'b_scales' ("modified its input 'b_scales' (first changed byte at 0").
#include "naive_kernel.cuh"

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, M, N, K);
  cudaMemsetAsync(const_cast<uint8_t*>(b_scales), 0, size_t(N) * (K / 16), 0);
}
