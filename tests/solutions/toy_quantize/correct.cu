// toy_quantize, correct: one block per row; amax by a block reduction, then the codes.
// The FP32 division x / s matches the oracle; round half to even with rintf.
#include <cuda_bf16.h>
#include <cstdint>

__global__ void quantize_rows(const __nv_bfloat16* x, uint8_t* q, __nv_bfloat16* s, int K,
                              int skip_last_row) {
  const int m = blockIdx.x;
  if (skip_last_row && m == gridDim.x - 1) return;
  __shared__ float red[256];
  float amax = 0;
  for (int k = threadIdx.x; k < K; k += blockDim.x) {
    amax = fmaxf(amax, fabsf(__bfloat162float(x[size_t(m) * K + k])));
  }
  red[threadIdx.x] = amax;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + w]);
    __syncthreads();
  }
  const __nv_bfloat16 sb = __float2bfloat16_rn(red[0] > 0 ? red[0] / 127.0f : 1.0f);
  const float s32 = __bfloat162float(sb);
  if (threadIdx.x == 0) s[m] = sb;
  for (int k = threadIdx.x; k < K; k += blockDim.x) {
    float v = __fdiv_rn(__bfloat162float(x[size_t(m) * K + k]), s32);
#ifdef HALF_AWAY
    float r = truncf(v + copysignf(0.5f, v));
#else
    float r = rintf(v);
#endif
    q[size_t(m) * K + k] = uint8_t(fminf(255.0f, fmaxf(0.0f, 128.0f + r)));
  }
}

#ifndef SKIP_LAST_ROW
#define SKIP_LAST_ROW 0
#endif

extern "C" void solve(const __nv_bfloat16* x, uint8_t* q, __nv_bfloat16* s, int M, int K) {
  quantize_rows<<<M, 256>>>(x, q, s, K, SKIP_LAST_ROW);
}
