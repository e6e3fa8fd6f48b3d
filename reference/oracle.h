// FP32 oracles for the NVFP4 x NVFP4 matmul:
//   c[m][n] = alpha * sum_k deq(a)[m][k] * deq(b)[n][k]
// with deq(x)[r][k] = e2m1(x nibble) * e4m3(x scale of block k/16). Every product of two
// dequantized elements is exact in FP32; the sums are FP32 (never TF32, never half).
#pragma once

#include <cstdint>
#include <string>

namespace fp4arena {

/// One NVFP4 matmul problem, all pointers in HOST memory. Shapes: a [M][K/2],
/// a_scales [M][K/16], b [N][K/2], b_scales [N][K/16].
struct Nvfp4MatmulProblem {
  int M = 0, N = 0, K = 0;
  const uint8_t* a = nullptr;
  const uint8_t* a_scales = nullptr;
  const uint8_t* b = nullptr;
  const uint8_t* b_scales = nullptr;
  float alpha = 1.0f;
};

/// CPU oracle: dequantizes both operands to FP32, then a blocked FP32 GEMM (each output a
/// plain FP32 dot product over k in increasing order, accumulated in one float), spread
/// over `threads` threads (0: std::thread::hardware_concurrency()). `c` is M*N floats,
/// row-major, and holds alpha * dot.
void oracle_fp32_cpu(const Nvfp4MatmulProblem& p, float* c, int threads = 0);

/// GPU oracle on the current CUDA device: dequantizes both operands to FP32 on the device
/// and multiplies them with an FP32 GEMM (cuBLAS SGEMM in CUBLAS_PEDANTIC_MATH mode, so no
/// TF32 or reduced-precision path can be chosen). `c` is M*N host floats. Returns false
/// and sets *err (naming the failing CUDA/cuBLAS call) on any error.
bool oracle_fp32_gpu(const Nvfp4MatmulProblem& p, float* c, std::string* err);

}  // namespace fp4arena
