// Bug: ignores rule and always quantizes with rule 0. Must fail every four-over-six case.
#include "quantize_kernel.cuh"

extern "C" void solve(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales, float* global_scale,
                      int M, int K, int rule) {
  adversarial_quantize::nvfp4_solve<adversarial_quantize::Bug::kAlwaysRule0>(
      x, q, scales, global_scale, M, K, rule);
}
