// Bug: the running sum is an __half. The judge must give `wrong_answer` on large_k_positive
// (K = 8192, every term positive: the half sum stalls far below the true sum).
#include "naive_kernel.cuh"

extern "C" void solve(const __half* x, const uint8_t* w, const __half* w_scales, __half* y, int M,
                      int N, int K, int group_size) {
  using adversarial_w4a16::Mode;
  adversarial_w4a16::launch_naive<Mode::kHalfAccumulate>(x, w, w_scales, y, M, N, K, group_size);
}
