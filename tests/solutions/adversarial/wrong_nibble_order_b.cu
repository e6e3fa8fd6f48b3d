// Cheat (wrong arithmetic): the shared kernel, but B's element 2j is read from the HIGH nibble of
// byte j (A is read correctly). The judge must give `wrong_answer` ("elements outside atol",
// every element written and finite) on tails_77x135x48 and k16_only (all_zero_a cannot: A is 0).
#include "naive_kernel.cuh"

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  using adversarial::Mode;
  adversarial::launch_naive<Mode::kSwapNibblesB>(a, a_scales, b, b_scales, alpha, c, M, N, K);
}
