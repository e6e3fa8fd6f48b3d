// Cheat: a load-time constructor redirects the worker's cudaEventElapsedTime so that every
// device time the worker measures is halved (forge_elapsed.cuh). The work itself is correct.
// The worker's report is a lie that gains nothing: the judge's figure comes from its own
// events, so the fixture passes at its honest speed (the record keeps the halved report as
// worker_reported_median_ms, a diagnostic).
#include "naive_kernel.cuh"

namespace forged {
constexpr float kForgedFraction = 0.5f;
constexpr float kForgedOffsetMs = 0.0f;
constexpr float kForgedFloor = 0.0f;
}  // namespace forged
#include "forge_elapsed.cuh"

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, M, N, K, 0);
}
