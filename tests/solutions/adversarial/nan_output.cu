// Cheat: computes c correctly, then stores a quiet NaN (0x7E00, not the judge's 0xFFFF poison)
// into c[0]. The judge must give `wrong_answer` with "1 NaN/Inf" (and nothing "never written").
#include "naive_kernel.cuh"

namespace {

__global__ void store_nan(__half* c) {
  c[0] = __ushort_as_half(0x7E00);
}

}  // namespace

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, M, N, K);
  store_nan<<<1, 1>>>(c);
}
