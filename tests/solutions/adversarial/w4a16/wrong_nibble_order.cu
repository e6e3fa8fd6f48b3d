// Bug: element 2j of a row read from the HIGH nibble of byte j (the LeetGPU draft's order).
// The judge must give `wrong_answer` on example and tails_77x135x96.
#include "naive_kernel.cuh"

extern "C" void solve(const __half* x, const uint8_t* w, const __half* w_scales, __half* y, int M,
                      int N, int K, int group_size) {
  using adversarial_w4a16::Mode;
  adversarial_w4a16::launch_naive<Mode::kSwapNibbles>(x, w, w_scales, y, M, N, K, group_size);
}
