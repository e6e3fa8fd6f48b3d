// naive.cu: the first rung of the NVFP4 quantization ladder. Both rules, written to follow the
// pinned formulas of challenges/nvfp4_quantize/README.md operation by operation, so that its
// codes are the reference's bit for bit; deliberately simple: one pass for the tensor's amax
// (atomicMax on the float's bits), then one thread per block of 16.
//
//   run:  scripts/run_challenge challenges/nvfp4_quantize --solution
//   solutions/nvfp4_quantize/naive.cu
//
// Expected bound: x is read twice (once for the amax, once to quantize), and the second pass
// reads 32 bytes per thread with a stride: well below the copy yardstick.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "encode.cuh"  // the ladder's shared device helpers

namespace {

using namespace nvfp4q;

__device__ unsigned int g_amax_bits;  // max |x| as float bits: non-negative floats order as ints

__global__ void reset_amax() {
  g_amax_bits = 0;
}

__global__ void amax_kernel(const __nv_bfloat16* x, size_t n) {
  float m = 0.0f;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    m = fmaxf(m, fabsf(__bfloat162float(x[i])));
  }
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, o));
  if ((threadIdx.x & 31) == 0) atomicMax(&g_amax_bits, __float_as_uint(m));
}

// E2M1 round to nearest, ties to even, saturating at 6; the sign kept (-0 is code 8).
__device__ __forceinline__ uint32_t e2m1_rne(float v) {
  const float a = fabsf(v);
  uint32_t mag;
  if (a <= 0.25f) {
    mag = 0;
  } else if (a < 0.75f) {
    mag = 1;
  } else if (a <= 1.25f) {
    mag = 2;
  } else if (a < 1.75f) {
    mag = 3;
  } else if (a <= 2.5f) {
    mag = 4;
  } else if (a < 3.5f) {
    mag = 5;
  } else if (a <= 5.0f) {
    mag = 6;
  } else {
    mag = 7;
  }
  return (signbit(v) ? 8u : 0u) | mag;
}

__device__ __forceinline__ float e2m1_value(uint32_t code) {
  const float kMagnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float m = kMagnitude[code & 7];
  return (code & 8) ? -m : m;
}

// One thread per block of 16 elements.
__global__ void quantize_kernel(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales,
                                float* global_scale, size_t blocks, int rule) {
  const float amax = __uint_as_float(g_amax_bits);
  const size_t b = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  // Rule 0: gs = 2688 / amax; rule 1: 1536 / amax; 1 for an all-zero tensor.
  const float gs = amax > 0.0f ? (rule == 0 ? 2688.0f : 1536.0f) / amax : 1.0f;
  if (b == 0) *global_scale = gs;
  if (b >= blocks) return;
  float v[16];
  float bmax = 0.0f;
  for (int i = 0; i < 16; ++i) {
    v[i] = __bfloat162float(x[b * 16 + i]);
    bmax = fmaxf(bmax, fabsf(v[i]));
  }
  uint32_t codes[16];
  uint32_t scale_code;
  if (rule == 0) {
    scale_code = e4m3_rne(bmax / 6.0f * gs);
    const float S = e4m3_value(scale_code);
    for (int i = 0; i < 16; ++i) codes[i] = S == 0.0f ? 0u : e2m1_rne(__fdiv_rn(v[i] * gs, S));
  } else if (amax == 0.0f) {
    scale_code = 0;
    for (int i = 0; i < 16; ++i) codes[i] = 0;
  } else {
    // Four over six: quantize with the block amax mapped to 6 and to 4, keep the candidate
    // with the smaller sum of squared errors after dequantizing (6 on a tie).
    const float ds = 1.0f / gs;
    const float s6 = bmax / 6.0f * gs;
    const uint32_t c6 = e4m3_rne(s6), c4 = e4m3_rne(__fmul_rn(s6, 1.5f));
    uint32_t q6[16], q4[16];
    float err6 = 0.0f, err4 = 0.0f;
    for (int c = 0; c < 2; ++c) {
      const uint32_t sc = c == 0 ? c6 : c4;
      uint32_t* out = c == 0 ? q6 : q4;
      const float S = e4m3_value(sc);
      const float r = S == 0.0f ? 0.0f : __fdiv_rn(1.0f, __fmul_rn(ds, S));
      float err = 0.0f;
      for (int i = 0; i < 16; ++i) {
        out[i] = S == 0.0f ? 0u : e2m1_rne(__fmul_rn(v[i], r));
        const float deq = __fdiv_rn(__fmul_rn(__fmul_rn(e2m1_value(out[i]), S), amax), 1536.0f);
        const float d = __fsub_rn(deq, v[i]);
        err = __fadd_rn(err, __fmul_rn(d, d));  // no fused multiply-add: the pinned order
      }
      (c == 0 ? err6 : err4) = err;
    }
    const bool four = err4 < err6;
    scale_code = four ? c4 : c6;
    for (int i = 0; i < 16; ++i) codes[i] = four ? q4[i] : q6[i];
  }
  scales[b] = uint8_t(scale_code);
  for (int i = 0; i < 8; ++i) q[b * 8 + i] = uint8_t(codes[2 * i] | (codes[2 * i + 1] << 4));
}

}  // namespace

extern "C" void solve(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales, float* global_scale,
                      int M, int K, int rule) {
  const size_t n = size_t(M) * K, blocks = n / 16;
  reset_amax<<<1, 1>>>();
  amax_kernel<<<1024, 256>>>(x, n);
  quantize_kernel<<<unsigned((blocks + 255) / 256), 256>>>(x, q, scales, global_scale, blocks,
                                                           rule);
}
