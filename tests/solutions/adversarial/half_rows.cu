// Cheat (or a grid bug): computes only rows m < M/2 of c; the other rows keep the judge's
// poison. The judge must give `wrong_answer` with "never written": on tails_77x135x48 the
// 39 rows 38..76 are missing, "5265 of 10395 elements ...; 5265 never written".
#include "naive_kernel.cuh"

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, M / 2, N, K);
}
