// Cheat (partial output): only rows 0 .. M/2 - 1 of y are computed; the others keep the
// judge's poison. The judge must give `wrong_answer` with the unwritten elements counted.
#include "naive_kernel.cuh"

extern "C" void solve(const __half* x, const uint8_t* w, const __half* w_scales, __half* y, int M,
                      int N, int K, int group_size) {
  using adversarial_w4a16::Mode;
  adversarial_w4a16::launch_naive<Mode::kCorrect>(x, w, w_scales, y, M / 2, N, K, group_size);
}
