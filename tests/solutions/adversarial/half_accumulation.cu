// Cheat (wrong arithmetic): the shared kernel, but the running sum is an __half. The judge must
// give `wrong_answer` ("elements outside atol") on large_k_positive (K = 3072, all terms
// positive: the half sum stalls, finite but far off) and gaussian_outliers (it overflows: Inf).
#include "naive_kernel.cuh"

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  using adversarial::Mode;
  adversarial::launch_naive<Mode::kHalfAccumulate>(a, a_scales, b, b_scales, alpha, c, M, N, K);
}
