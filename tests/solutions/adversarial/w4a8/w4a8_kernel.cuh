// w4a8_kernel.cuh: the one simple W4A8 grouped kernel every w4a8 adversarial fixture builds
// on (each fixture does `#include "w4a8_kernel.cuh"`; the judge hashes the header into its
// compile key).
//
// One thread per y[t][n], FP32 accumulation; grid.z is the expert, which reads its own rows
// from group_offsets on the device. The arithmetic is templated on a Mode so that the
// fixtures that break it differ from the correct kernel in exactly one place. Everything
// below the kernel is __host__ __device__, so a host program can compute bit for bit what a
// fixture writes.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace w4a8_adversarial {

enum class Mode : int {
  kCorrect = 0,     // the reference behaviour
  kIgnoreOffsets,   // expert g takes rows g*T/G .. (g+1)*T/G - 1, as if routing were even
  kFirstRowScale,   // every row scaled by x_scales[0] (a per-tensor activation scale)
  kAssumeNonEmpty,  // an expert's row loop runs at least once, so an empty expert g writes
                    // row offsets[g] (past the end of y when offsets[g] == T)
  kHalfAccumulate,  // the running sum is an __half (each product rounded to half, then added)
};

// E2M1: sign<<3 | exp<<1 | mantissa; magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6.
__host__ __device__ inline float e2m1_value(uint32_t code) {
  uint32_t e = (code >> 1) & 3, m = code & 1;
  float v = e == 0 ? 0.5f * float(m) : ldexpf(float(2 + m), int(e) - 2);
  return (code & 8) ? -v : v;
}

// float8_e4m3fn: bias 7, subnormals below exponent field 1 (the judge never sends NaN codes).
__host__ __device__ inline float e4m3_value(uint32_t code) {
  uint32_t e = (code >> 3) & 0xF, m = code & 7;
  float v = e == 0 ? ldexpf(float(m), -9) : ldexpf(float(8 + m), int(e) - 10);
  return (code & 0x80) ? -v : v;
}

// The rows [*begin, *end) expert g works on.
template <Mode kMode>
__host__ __device__ inline void rows_of(const int* offsets, int g, int T, int G, int* begin,
                                        int* end) {
  if (kMode == Mode::kIgnoreOffsets) {
    *begin = int(int64_t(g) * T / G);
    *end = int(int64_t(g + 1) * T / G);
  } else {
    *begin = offsets[g];
    *end = offsets[g + 1];
  }
  if (kMode == Mode::kAssumeNonEmpty && *end == *begin) *end = *begin + 1;
}

// y[t][n] for row t of expert g.
template <Mode kMode>
__host__ __device__ inline __nv_bfloat16 w4a8_element(const uint8_t* x, const float* x_scales,
                                                      const uint8_t* w, const uint8_t* w_scales,
                                                      const float* w_global, int t, int n, int g,
                                                      int N, int K) {
  const uint8_t* x_row = x + size_t(t) * K;
  const uint8_t* w_row = w + (size_t(g) * N + n) * (K / 2);
  const uint8_t* s_row = w_scales + (size_t(g) * N + n) * (K / 16);
  float acc = 0.0f;
  __half acc_h = __float2half_rn(0.0f);
  for (int k = 0; k < K; ++k) {
    const uint32_t byte = w_row[k / 2];
    const float p = e4m3_value(x_row[k]) *
                    (e2m1_value(k % 2 ? byte >> 4 : byte & 0xF) * e4m3_value(s_row[k / 16]));
    if (kMode == Mode::kHalfAccumulate) {
      acc_h = __hadd(acc_h, __float2half_rn(p));
    } else {
      acc += p;
    }
  }
  if (kMode == Mode::kHalfAccumulate) acc = __half2float(acc_h);
  const float xs = kMode == Mode::kFirstRowScale ? x_scales[0] : x_scales[t];
  return __float2bfloat16_rn(xs * (w_global[g] * acc));
}

template <Mode kMode>
__global__ void w4a8_kernel(const uint8_t* x, const float* x_scales, const uint8_t* w,
                            const uint8_t* w_scales, const float* w_global, const int* offsets,
                            __nv_bfloat16* y, int T, int N, int K, int G) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  const int g = blockIdx.z;
  if (n >= N) return;
  int begin = 0, end = 0;
  rows_of<kMode>(offsets, g, T, G, &begin, &end);
  for (int t = begin + int(blockIdx.y); t < end; t += gridDim.y) {
    y[size_t(t) * N + n] = w4a8_element<kMode>(x, x_scales, w, w_scales, w_global, t, n, g, N, K);
  }
}

// Launches the kernel on the default stream; returns the launch status without clearing it.
template <Mode kMode = Mode::kCorrect>
inline cudaError_t launch_w4a8(const uint8_t* x, const float* x_scales, const uint8_t* w,
                               const uint8_t* w_scales, const float* w_global, const int* offsets,
                               __nv_bfloat16* y, int T, int N, int K, int G) {
  if (T <= 0 || N <= 0 || G <= 0) return cudaSuccess;
  dim3 block(128);
  dim3 grid((N + block.x - 1) / block.x, 64, G);
  w4a8_kernel<kMode><<<grid, block>>>(x, x_scales, w, w_scales, w_global, offsets, y, T, N, K, G);
  return cudaPeekAtLastError();
}

}  // namespace w4a8_adversarial
