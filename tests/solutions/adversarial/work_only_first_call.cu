// Cheat: computes only the first call of each shape (M, N, K); every later call of that shape
// returns at once, leaving c as the judge's poison. The judge must give `wrong_answer` with
// "never written" on the second call of a shape: alpha_1_64 (after alpha_1, same shape) and
// call 2 of a benchmark (the first warm-up after the case-seed call).
#include <set>
#include <tuple>

#include "naive_kernel.cuh"

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  static std::set<std::tuple<int, int, int>> seen;
  if (!seen.insert(std::make_tuple(M, N, K)).second) return;
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, M, N, K);
}
