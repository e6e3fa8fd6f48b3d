// Cheat: the code route of forge_elapsed.cuh (the worker's own cudaEventElapsedTime
// overwritten at load time) takes a fixed 45 us off every time the worker measures, never
// below 8% of it: just under the margins by which the judge once held the worker's report
// to its own clocks (max(50 us, 10%) and max(60 us, 3%)), which let such a patch pass with a
// faster score. The judge's figure now comes from its own events only: the fixture must
// score as the honest kernel does (tests/harness/gpu_adversarial_test.cc).
#include "naive_kernel.cuh"

namespace forged {
constexpr float kForgedFraction = 1.0f;
constexpr float kForgedOffsetMs = 0.045f;
constexpr float kForgedFloor = 0.08f;
}  // namespace forged
#include "forge_elapsed.cuh"

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, M, N, K, 0);
}
