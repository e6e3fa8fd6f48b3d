// Cheat (wrong arithmetic): the shared kernel, but every a_scales / b_scales value is taken as
// 1.0. The judge must give `wrong_answer` ("elements outside atol", every element written and
// finite) on example and tails_77x135x48.
#include "naive_kernel.cuh"

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  using adversarial::Mode;
  adversarial::launch_naive<Mode::kIgnoreScales>(a, a_scales, b, b_scales, alpha, c, M, N, K);
}
