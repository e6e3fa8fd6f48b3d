// Cheat: the correct NVFP4 quantizer (about 0.2 ms on the activations benchmark of an H200),
// with every device time the worker measures scaled by 0.55 (../forge_elapsed.cuh). The
// 0.09 ms it hides is inside the host clock's margin (at least 0.05 ms or 10% of the round
// trip, plus the overhead beside the call) but not the judge's device clock's (0.06 ms):
// the benchmark must get `timing_mismatch` from the device clock.
#include "quantize_kernel.cuh"

namespace forged {
constexpr float kForgedFraction = 0.55f;
}
#include "../forge_elapsed.cuh"

extern "C" void solve(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales, float* global_scale,
                      int M, int K, int rule) {
  adversarial_quantize::nvfp4_solve<adversarial_quantize::Bug::kNone>(x, q, scales, global_scale, M,
                                                                      K, rule);
}
