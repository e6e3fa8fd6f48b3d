// naive.cu: the first rung of the W4A8 grouped GEMM ladder. Correct for every valid shape
// and deliberately simple: one thread per output element, FP32 accumulation.
//
//   run:  build/run_challenge challenges/w4a8_grouped_gemm \
//           --solution solutions/w4a8_grouped_gemm/naive.cu --action check
//
// Shapes: x is (T, K) e4m3, x_scales (T) fp32; w is (G, N, K/2) packed e2m1, w_scales
// (G, N, K/16) e4m3, w_global (G) fp32; group_offsets (G+1) int32; y is (T, N) bf16. Element
// k of a weight row is the low nibble of byte k/2 when k is even, the high nibble when odd.
//
// Each thread finds its row's expert by a binary search over group_offsets (the largest g
// with offsets[g] <= t), so empty experts (offsets[g] == offsets[g+1]) are never chosen.
// Every product e4m3 * e2m1 * e4m3 is exact in FP32; only the sum rounds.
//
// Expected bound: each thread re-reads a whole row of x and of w; far from the tensor
// cores, it exists to be obviously right. TF/s measured on the GPU machine is in
// solutions/w4a8_grouped_gemm/README.md.
#include <cuda_bf16.h>

#include <cstdint>

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
  float v = exp == 0 ? ldexpf(float(mant), -9) : ldexpf(float(8 + mant), int(exp) - 10);
  return (code & 0x80) ? -v : v;
}

// ---- Kernel ---------------------------------------------------------------------------

// The expert of row t: the largest g with offsets[g] <= t < offsets[g+1].
__device__ int expert_of(const int* offsets, int G, int t) {
  int lo = 0, hi = G - 1;  // offsets[0] = 0 <= t, so the answer is in [0, G-1]
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (offsets[mid] <= t) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// One thread per y[t][n]: x covers n, y covers t (strided).
__global__ void naive_kernel(const uint8_t* x, const float* x_scales, const uint8_t* w,
                             const uint8_t* w_scales, const float* w_global,
                             const int* group_offsets, __nv_bfloat16* y, int T, int N, int K,
                             int G) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  // gridDim.y is at most 65535, so a block row steps over the rows.
  for (int t = blockIdx.y; t < T; t += gridDim.y) {
    const int g = expert_of(group_offsets, G, t);
    const uint8_t* x_row = x + size_t(t) * K;
    const uint8_t* w_row = w + (size_t(g) * N + n) * (K / 2);
    const uint8_t* s_row = w_scales + (size_t(g) * N + n) * (K / 16);
    float acc = 0.0f;
    for (int blk = 0; blk < K / 16; ++blk) {
      const float s = e4m3_value(s_row[blk]);
      for (int k = blk * 16; k < blk * 16 + 16; k += 2) {
        const uint32_t byte = w_row[k / 2];
        acc += e4m3_value(x_row[k]) * (e2m1_value(byte & 0xF) * s);
        acc += e4m3_value(x_row[k + 1]) * (e2m1_value(byte >> 4) * s);
      }
    }
    y[size_t(t) * N + n] = __float2bfloat16_rn(x_scales[t] * (w_global[g] * acc));
  }
}

}  // namespace

// ---- Launcher -------------------------------------------------------------------------

extern "C" void solve(const uint8_t* x, const float* x_scales, const uint8_t* w,
                      const uint8_t* w_scales, const float* w_global, const int* group_offsets,
                      __nv_bfloat16* y, int T, int N, int K, int G) {
  if (T <= 0 || N <= 0) return;
  dim3 block(128);
  dim3 grid((N + block.x - 1) / block.x, T < 65535 ? T : 65535);
  naive_kernel<<<grid, block>>>(x, x_scales, w, w_scales, w_global, group_offsets, y, T, N, K, G);
}
