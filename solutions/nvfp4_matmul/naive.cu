// naive.cu: the first rung of the NVFP4 x NVFP4 matmul ladder. Correct for every valid shape
// and deliberately simple: one thread per output element, FP32 accumulation.
//
//   run:  scripts/run_challenge challenges/nvfp4_matmul --solution solutions/nvfp4_matmul/naive.cu
//
// Shapes: a is (M, K/2) packed e2m1, a_scales is (M, K/16) e4m3; b is (N, K/2) packed e2m1,
// b_scales is (N, K/16) e4m3; c is (M, N) fp16. Element k of a row is the low nibble of
// byte k/2 when k is even, the high nibble when k is odd.
//
// Judged: `scripts/run_challenge challenges/nvfp4_matmul --solution solutions/nvfp4_matmul/naive.cu
//   --action submit` on an NVIDIA H200 (132 SMs, driver 580.159.04, judge 0.2.0, 2026-11-22):
//   table5 264.6890 ms = 0.9 TF/s (0.00x cuBLAS FP16 on pre-dequantized operands in the same run),
//   rev1 117.5573 ms = 0.9 TF/s (0.00x). `--action sweep` of the same code (2026-11-23, same
//   machine kind; run timing), ratio to cuBLAS: 0.00 (1024^3), 0.00 (2048^3), 0.00 (4096^3), 0.00
//   (8192^3), 0.00 (4096x4096x8192). The committed record (results/nvfp4_matmul/nvidia-h200/) and
//   sweep (solutions/nvfp4_matmul/README.md) are later runs of this file.
//
// Expected bound: each thread re-reads a whole row of a and of b, so this is bound by L1/L2
// traffic and integer decode work, far from the tensor cores; it exists to be obviously
// right, not fast. TF/s measured on the GPU machine is in solutions/nvfp4_matmul/README.md.
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdio>

namespace {

// ---- Codecs ---------------------------------------------------------------------------

// E2M1: sign<<3 | exp<<1 | mantissa; magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6.
__device__ __forceinline__ float e2m1_value(uint32_t code) {
  const float kMagnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  float m = kMagnitude[code & 7];
  return (code & 8) ? -m : m;
}

// float8_e4m3fn: bias 7, subnormals below exponent field 1, no infinities; the judge never
// passes the NaN codes 0x7F / 0xFF.
__device__ __forceinline__ float e4m3_value(uint32_t code) {
  uint32_t exp = (code >> 3) & 0xF;
  uint32_t mant = code & 7;
  float v = exp == 0 ? ldexpf(float(mant), -9)                  // mant/8 * 2^-6
                     : ldexpf(float(8 + mant), int(exp) - 10);  // (1+mant/8) * 2^(exp-7)
  return (code & 0x80) ? -v : v;
}

// ---- Kernel ---------------------------------------------------------------------------

// One thread per c[m][n]; x = blockIdx.x covers n so that a warp reads one row of a.
__global__ void nvfp4_matmul_naive(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                                   const uint8_t* b_scales, float alpha, __half* c, int M, int N,
                                   int K) {
  int n = blockIdx.x * blockDim.x + threadIdx.x;
  int m = blockIdx.y;
  if (n >= N || m >= M) return;
  const uint8_t* a_row = a + size_t(m) * (K / 2);
  const uint8_t* b_row = b + size_t(n) * (K / 2);
  const uint8_t* as_row = a_scales + size_t(m) * (K / 16);
  const uint8_t* bs_row = b_scales + size_t(n) * (K / 16);
  float acc = 0.0f;
  for (int blk = 0; blk < K / 16; ++blk) {
    // Products of two e2m1 x e4m3 values are exact in FP32; only the sum rounds.
    float sa = e4m3_value(as_row[blk]);
    float sb = e4m3_value(bs_row[blk]);
    for (int j = 0; j < 8; ++j) {
      uint32_t va = a_row[blk * 8 + j];
      uint32_t vb = b_row[blk * 8 + j];
      acc += (e2m1_value(va & 0xF) * sa) * (e2m1_value(vb & 0xF) * sb);
      acc += (e2m1_value(va >> 4) * sa) * (e2m1_value(vb >> 4) * sb);
    }
  }
  c[size_t(m) * N + n] = __float2half_rn(alpha * acc);
}

}  // namespace

// ---- Launcher -------------------------------------------------------------------------

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  dim3 block(256);
  dim3 grid((N + block.x - 1) / block.x, M);
  nvfp4_matmul_naive<<<grid, block>>>(a, a_scales, b, b_scales, alpha, c, M, N, K);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) std::fprintf(stderr, "naive: launch failed: %s\n", cudaGetErrorString(e));
}
