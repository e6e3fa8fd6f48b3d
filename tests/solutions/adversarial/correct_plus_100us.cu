// Control: correct.cu plus a one-thread kernel that spins for 100 us of %globaltimer on the
// same (legacy default) stream after the real work. The judge must give `passed`, and the
// median it times must be about 100 us above correct.cu's: the timed window covers all of it.
#include "naive_kernel.cuh"

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, M, N, K);
  adversarial::spin_for<<<1, 1>>>(100000);
}
