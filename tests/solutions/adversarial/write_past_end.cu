// Cheat (a tail bug): computes c correctly, then flips every bit of the half just past its end,
// c[M*N], which lies in the judge's trailing canary. The judge must give
// `out_of_bounds_write` with "wrote past the end of 'c'".
#include "naive_kernel.cuh"

namespace {

__global__ void flip_one_past_end(uint16_t* c, size_t elements) {
  c[elements] = static_cast<uint16_t>(~c[elements]);  // differs from the canary for sure
}

}  // namespace

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, M, N, K);
  flip_one_past_end<<<1, 1>>>(reinterpret_cast<uint16_t*>(c), size_t(M) * N);
}
