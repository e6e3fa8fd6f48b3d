// Bug: the OCP MX spec's suggested scale 2^(floor(log2 bmax) - 2), elements above 6 clamped. Must
// fail scale_edges.
#include "quantize_kernel.cuh"

extern "C" void solve(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales, int M, int K) {
  adversarial_quantize::mxfp4_solve<adversarial_quantize::Bug::kFlooredScale>(x, q, scales, M, K);
}
