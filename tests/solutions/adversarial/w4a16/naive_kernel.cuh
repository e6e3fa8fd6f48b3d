// naive_kernel.cuh: the one simple W4A16 kernel every fixture in this folder builds on (each
// does `#include "naive_kernel.cuh"`; the judge hashes the header into its compile key).
//
// One thread per y[m][n], FP32 accumulation, like solutions/w4a16_matmul/naive.cu. The
// arithmetic is templated on a Mode so that each broken fixture differs from the correct
// kernel in exactly one place. dot_element is __host__ __device__, so a host program can
// compute bit for bit what a fixture writes.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace adversarial_w4a16 {

enum class Mode : int {
  kCorrect = 0,     // exact products, FP32 running sum (the reference behaviour)
  kSwapNibbles,     // element 2j read from the HIGH nibble of byte j
  kIgnoreScales,    // every w_scales value taken as 1.0
  kGroupAlways32,   // scale index k / 32 in the row's scale list, whatever group_size is
  kHalfAccumulate,  // the running sum is an __half (each product rounded to half, then added)
};

// E2M1: sign<<3 | exp<<1 | mantissa; magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6.
__host__ __device__ inline float e2m1_value(uint32_t code) {
  uint32_t e = (code >> 1) & 3, m = code & 1;
  float v = e == 0 ? 0.5f * float(m) : ldexpf(float(2 + m), int(e) - 2);
  return (code & 8) ? -v : v;
}

template <Mode kMode>
__host__ __device__ inline __half dot_element(const __half* x_row, const uint8_t* w_row,
                                              const __half* s_row, int K, int group_size) {
  float acc = 0.0f;
  __half acc_h = __float2half_rn(0.0f);
  const int group = kMode == Mode::kGroupAlways32 ? 32 : group_size;
  for (int k = 0; k < K; ++k) {
    uint32_t byte = w_row[k / 2];
    bool high = (k & 1) != (kMode == Mode::kSwapNibbles);
    float s = kMode == Mode::kIgnoreScales ? 1.0f : __half2float(s_row[k / group]);
    float p = __half2float(x_row[k]) * (e2m1_value(high ? byte >> 4 : byte & 0xF) * s);
    if (kMode == Mode::kHalfAccumulate) {
      acc_h = __hadd(acc_h, __float2half_rn(p));
    } else {
      acc += p;
    }
  }
  if (kMode == Mode::kHalfAccumulate) acc = __half2float(acc_h);
  return __float2half_rn(acc);
}

// One thread per y[m][n] for rows m < rows; x covers n, y covers m.
template <Mode kMode>
__global__ void naive_kernel(const __half* x, const uint8_t* w, const __half* w_scales, __half* y,
                             int rows, int N, int K, int group_size) {
  int n = blockIdx.x * blockDim.x + threadIdx.x;
  int m = blockIdx.y;
  if (n >= N || m >= rows) return;
  y[size_t(m) * N + n] = dot_element<kMode>(x + size_t(m) * K, w + size_t(n) * (K / 2),
                                            w_scales + size_t(n) * (K / group_size), K, group_size);
}

// Launches the kernel for rows 0..rows-1 of y on the default stream. Writes nothing when rows
// or N is 0. Returns the launch status without clearing it.
template <Mode kMode = Mode::kCorrect>
inline cudaError_t launch_naive(const __half* x, const uint8_t* w, const __half* w_scales,
                                __half* y, int rows, int N, int K, int group_size) {
  if (rows <= 0 || N <= 0) return cudaSuccess;
  dim3 block(128);
  dim3 grid((N + block.x - 1) / block.x, rows);
  naive_kernel<kMode><<<grid, block>>>(x, w, w_scales, y, rows, N, K, group_size);
  return cudaPeekAtLastError();
}

}  // namespace adversarial_w4a16
