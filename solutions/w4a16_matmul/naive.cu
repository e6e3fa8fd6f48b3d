// naive.cu: the first rung of the W4A16 matmul ladder. Correct for every valid shape and
// deliberately simple: one thread per output element, FP32 accumulation.
//
//   run:  scripts/run_challenge challenges/w4a16_matmul --solution solutions/w4a16_matmul/naive.cu
//
// Shapes: x is (M, K) fp16; w is (N, K/2) packed e2m1, element k of a row in the low nibble
// of byte k/2 when k is even, the high nibble when k is odd; w_scales is (N, K/group_size)
// fp16; y is (M, N) fp16.
//
// Expected bound: each thread re-reads a whole row of x and of w through L1/L2; it exists to
// be obviously right, not fast.
#include <cuda_fp16.h>

#include <cstdint>

namespace {

// E2M1: sign<<3 | exp<<1 | mantissa; magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6.
__device__ __forceinline__ float e2m1_value(uint32_t code) {
  const float kMagnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  float m = kMagnitude[code & 7];
  return (code & 8) ? -m : m;
}

// One thread per y[m][n]: x covers n (neighbouring threads read neighbouring w rows), y
// covers m. Every product x * (e2m1 * scale) is exact in FP32; only the sum rounds.
__global__ void naive_kernel(const __half* x, const uint8_t* w, const __half* w_scales, __half* y,
                             int M, int N, int K, int group_size) {
  int n = blockIdx.x * blockDim.x + threadIdx.x;
  int m = blockIdx.y;
  if (n >= N || m >= M) return;
  const __half* x_row = x + size_t(m) * K;
  const uint8_t* w_row = w + size_t(n) * (K / 2);
  const __half* s_row = w_scales + size_t(n) * (K / group_size);
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) {
    uint32_t byte = w_row[k / 2];
    uint32_t code = (k & 1) ? byte >> 4 : byte & 0xF;
    float wk = e2m1_value(code) * __half2float(s_row[k / group_size]);
    acc += __half2float(x_row[k]) * wk;
  }
  y[size_t(m) * N + n] = __float2half_rn(acc);
}

}  // namespace

extern "C" void solve(const __half* x, const uint8_t* w, const __half* w_scales, __half* y, int M,
                      int N, int K, int group_size) {
  dim3 block(128);
  dim3 grid((N + block.x - 1) / block.x, M);
  naive_kernel<<<grid, block>>>(x, w, w_scales, y, M, N, K, group_size);
}
