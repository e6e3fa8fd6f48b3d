// Bug: a kernel written for group_size 32 only: the scale of element k is entry k / 32 of the
// row's scale list (the row stride K / group_size is right). Correct for group 32; with group
// 128 it reads the wrong groups (and, on the last row, up to 3K/64 bytes past the end of
// w_scales, inside the judge's 4 KiB canary: a read, so no integrity verdict). The judge must
// give `wrong_answer` on the group-128 cases and pass the group-32 ones.
#include "naive_kernel.cuh"

extern "C" void solve(const __half* x, const uint8_t* w, const __half* w_scales, __half* y, int M,
                      int N, int K, int group_size) {
  using adversarial_w4a16::Mode;
  adversarial_w4a16::launch_naive<Mode::kGroupAlways32>(x, w, w_scales, y, M, N, K, group_size);
}
