// Cheat: the correct NVFP4 quantizer (about 0.2 ms on the activations benchmark of an H200),
// with every device time the worker measures scaled by 0.55 (../forge_elapsed.cuh). The
// judge's figure comes from its own events only: the benchmark passes at its honest speed,
// and the forged time is only the record's worker_reported_median_ms.
#include "quantize_kernel.cuh"

namespace forged {
constexpr float kForgedFraction = 0.55f;
constexpr float kForgedOffsetMs = 0.0f;
constexpr float kForgedFloor = 0.0f;
}  // namespace forged
#include "../forge_elapsed.cuh"

extern "C" void solve(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales, float* global_scale,
                      int M, int K, int rule) {
  adversarial_quantize::nvfp4_solve<adversarial_quantize::Bug::kNone>(x, q, scales, global_scale, M,
                                                                      K, rule);
}
