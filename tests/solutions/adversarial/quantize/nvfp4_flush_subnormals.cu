// Bug: BF16 subnormal inputs read as zero (as a flush-to-zero load would). Must fail
// bf16_subnormals.
#include "quantize_kernel.cuh"

extern "C" void solve(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales, float* global_scale,
                      int M, int K, int rule) {
  adversarial_quantize::nvfp4_solve<adversarial_quantize::Bug::kFlushSubnormals>(
      x, q, scales, global_scale, M, K, rule);
}
