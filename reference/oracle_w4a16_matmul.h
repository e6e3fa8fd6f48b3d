// FP32 oracles for the W4A16 matmul (challenge w4a16_matmul):
//   y[m][n] = sum_k x[m][k] * w_deq[n][k],   w_deq[n][k] = e2m1(w[n][k]) * s[n][k / group_size]
// x FP16 activations, w E2M1 weights with one FP16 scale per group_size consecutive k.
//
// Exactness: e2m1 values have at most 2 significant bits and FP16 values at most 11, so
// w_deq = e2m1 * fp16 (at most 13 bits, magnitudes up to 6 * 65504) is exact in FP32 and
// every product x * w_deq (at most 24 bits, nonzero magnitudes within [2^-49, 2^35]) is
// exact in FP32 as well. Only the sums round; the oracles' outputs are FP32, never TF32 or
// half.
#pragma once

#include <cstdint>
#include <string>

#include <cuda_fp16.h>

namespace fp4arena {

/// One W4A16 matmul problem, all pointers in HOST memory. Shapes: x [M][K] FP16 row-major;
/// w [N][K/2] packed E2M1, element (n, 2j) in the LOW nibble of byte j, (n, 2j+1) in the
/// HIGH nibble; w_scales [N][K/group_size] FP16. Valid when M, N, K >= 0, K is even,
/// group_size > 0 and K % group_size == 0 (the challenge uses 32 and 128); a pointer may be
/// null only where its buffer is empty.
struct W4a16MatmulProblem {
  int M = 0, N = 0, K = 0;
  int group_size = 0;
  const __half* x = nullptr;
  const uint8_t* w = nullptr;
  const __half* w_scales = nullptr;
};

/// Empty when `p` is valid (see W4a16MatmulProblem); otherwise what is wrong with it.
std::string w4a16_matmul_problem_error(const W4a16MatmulProblem& p);

/// CPU oracle. y is M*N floats, row-major. Each output is exactly
///   float s = 0;
///   for k = 0..K-1: s += float(x[m][k]) * (e2m1(w[n][k]) * float(w_scales[n][k/group_size]));
///   y[m][n] = s;
/// (one FP32 accumulator, k in increasing order, the scale applied inside every product,
/// all products exact), whatever `threads` is (0: hardware concurrency): the result is
/// bit-identical for any thread count. Returns false and sets *err (if not null) on an
/// invalid problem, leaving y untouched.
[[nodiscard]] bool oracle_w4a16_matmul_cpu(const W4a16MatmulProblem& p, float* y, std::string* err,
                                           int threads = 0);

/// GPU oracle on the current CUDA device: converts x and dequantizes w to FP32 on the
/// device, then one cuBLAS SGEMM in CUBLAS_PEDANTIC_MATH mode (no TF32). Same products as
/// the CPU oracle; cuBLAS chooses the summation order, so outputs agree with the CPU
/// oracle's within the FP32 dot-product error bound, not bit for bit. y is M*N host floats.
/// Returns false and sets *err (naming the failing CUDA/cuBLAS call) on any error or an
/// invalid problem; device memory is freed on every path.
[[nodiscard]] bool oracle_w4a16_matmul_gpu(const W4a16MatmulProblem& p, float* y, std::string* err);

}  // namespace fp4arena
