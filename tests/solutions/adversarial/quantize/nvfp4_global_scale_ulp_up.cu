// Not a bug: a global scale one ulp above the pinned one (2688/amax computed another way), used for
// every code. The ulp comparison accepts it and the judge conditions the codes on it: must pass,
// midpoints included.
#include "quantize_kernel.cuh"

extern "C" void solve(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales, float* global_scale,
                      int M, int K, int rule) {
  adversarial_quantize::nvfp4_solve<adversarial_quantize::Bug::kGlobalScaleUp>(
      x, q, scales, global_scale, M, K, rule);
}
