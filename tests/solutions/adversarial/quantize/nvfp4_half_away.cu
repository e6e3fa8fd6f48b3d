// Bug: E2M1 ties rounded half away from zero. Must fail the midpoint cases (exact midpoints under
// power-of-two scales are no ties).
#include "quantize_kernel.cuh"

extern "C" void solve(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales, float* global_scale,
                      int M, int K, int rule) {
  adversarial_quantize::nvfp4_solve<adversarial_quantize::Bug::kHalfAway>(x, q, scales,
                                                                          global_scale, M, K, rule);
}
