// Control: a correct MXFP4 quantizer. Must pass every case it is judged on.
#include "quantize_kernel.cuh"

extern "C" void solve(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales, int M, int K) {
  adversarial_quantize::mxfp4_solve<adversarial_quantize::Bug::kNone>(x, q, scales, M, K);
}
