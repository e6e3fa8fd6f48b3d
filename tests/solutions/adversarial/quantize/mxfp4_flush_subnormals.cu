// Bug: BF16 subnormal inputs read as zero. Must fail bf16_subnormals.
#include "quantize_kernel.cuh"

extern "C" void solve(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales, int M, int K) {
  adversarial_quantize::mxfp4_solve<adversarial_quantize::Bug::kFlushSubnormals>(x, q, scales, M,
                                                                                 K);
}
