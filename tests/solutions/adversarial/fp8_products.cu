// Cheat (wrong arithmetic): the shared kernel, but each product of dequantized values is rounded
// to __nv_fp8_e4m3 before the FP32 sum. The judge must give `wrong_answer` ("elements outside
// atol") on alpha_1 and tails_383x511x528. large_k_positive does NOT catch it: with every term
// positive the rounding errors stay inside rtol 0.05.
#include "naive_kernel.cuh"

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  using adversarial::Mode;
  adversarial::launch_naive<Mode::kFp8Products>(a, a_scales, b, b_scales, alpha, c, M, N, K);
}
