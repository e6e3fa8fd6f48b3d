// A CuTe-based solution of nvfp4_matmul, for the test that a solution built on CUTLASS's CuTe
// headers compiles and is judged (tests/harness/gpu_cute_test.cc). The operands are CuTe
// tensors over global memory; each thread computes one element of C in FP32, as naive.cu does.
// Needs `--include-dir <cutlass>/include --nvcc-flag=--expt-relaxed-constexpr`.
#include <cuda_fp16.h>

#include <cstdint>

#include <cute/tensor.hpp>

// A named namespace: nvcc's host stub cannot name a kernel template of an anonymous one
// instantiated with CuTe types.
namespace nvfp4_cute {

using namespace cute;

// E2M1: sign << 3 | exponent << 1 | mantissa; magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6.
__device__ float e2m1_value(uint32_t code) {
  const float magnitude[8] = {0.f, 0.5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f};
  const float v = magnitude[code & 7];
  return (code & 8) ? -v : v;
}

// E4M3 (bias 7, no infinities; 0x7F and 0xFF are NaN, which no valid scale is).
__device__ float e4m3_value(uint32_t code) {
  const uint32_t e = (code >> 3) & 15, m = code & 7;
  const float v = e == 0 ? ldexpf(float(m), -9) : ldexpf(float(8 + m), int(e) - 10);
  return (code & 0x80) ? -v : v;
}

// Element k of row r of a packed (rows, K/2) code tensor, times its (rows, K/16) block scale.
template <class Codes, class Scales>
__device__ float element(const Codes& codes, const Scales& scales, int r, int k) {
  const uint32_t byte = codes(r, k / 2);
  return e2m1_value((k & 1) ? byte >> 4 : byte & 15) * e4m3_value(scales(r, k / 16));
}

template <class TA, class TSA, class TB, class TSB, class TC>
__global__ void matmul_kernel(TA A, TSA SA, TB B, TSB SB, TC C, float alpha, int K) {
  const int m = blockIdx.y * blockDim.y + threadIdx.y;
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (m >= int(size<0>(C)) || n >= int(size<1>(C))) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += element(A, SA, m, k) * element(B, SB, n, k);
  C(m, n) = __float2half_rn(alpha * acc);
}

// A row-major (rows, cols) tensor over `p`.
template <class T>
auto row_major(T* p, int rows, int cols) {
  return make_tensor(make_gmem_ptr(p), make_layout(make_shape(rows, cols), LayoutRight{}));
}

}  // namespace nvfp4_cute

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  const dim3 block(16, 16);
  const dim3 grid((N + 15) / 16, (M + 15) / 16);
  using namespace nvfp4_cute;
  matmul_kernel<<<grid, block>>>(row_major(a, M, K / 2), row_major(a_scales, M, K / 16),
                                 row_major(b, N, K / 2), row_major(b_scales, N, K / 16),
                                 row_major(c, M, N), alpha, K);
}
