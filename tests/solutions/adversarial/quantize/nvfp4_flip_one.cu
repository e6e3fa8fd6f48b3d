// Bug: one code flipped to its neighbour where the value is far from any rounding boundary (rule
// 0). Must fail with exactly one element differing.
#include "quantize_kernel.cuh"

extern "C" void solve(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales, float* global_scale,
                      int M, int K, int rule) {
  adversarial_quantize::nvfp4_solve<adversarial_quantize::Bug::kFlipOne>(x, q, scales, global_scale,
                                                                         M, K, rule);
}
