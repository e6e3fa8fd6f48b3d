// FP32 oracles for the W4A8 grouped GEMM of a mixture of experts (challenge
// w4a8_grouped_gemm): for expert g and each of its rows t (offsets[g] <= t < offsets[g+1]),
//   y[t][n] = x_scales[t] * w_global[g] * sum_k e4m3(x[t][k]) * w_deq[g][n][k],
//   w_deq[g][n][k] = e2m1(w[g][n][k]) * e4m3(w_scales[g][n][k / 16]).
//
// Exactness: e2m1 values have at most 2 significant bits and E4M3 values at most 4, so the
// dequantized weight e2m1 * e4m3 (at most 6 bits, magnitudes within [2^-10, 2688]) is exact
// even in FP16, and every product e4m3 * e2m1 * e4m3 (at most 10 bits, magnitudes within
// [2^-19, 448 * 2688]) is exact in FP32. Only the sum and the two scalings round.
#pragma once

#include <cstdint>
#include <string>

namespace fp4arena {

/// One W4A8 grouped GEMM problem, all pointers in HOST memory. Shapes:
///   x [T][K] raw float8_e4m3fn bits, rows sorted by expert; x_scales [T] FP32, one per row;
///   w [G][N][K/2] packed E2M1, element (g, n, 2j) in the LOW nibble of byte j;
///   w_scales [G][N][K/16] raw float8_e4m3fn bits; w_global [G] FP32;
///   group_offsets [G+1]: 0 = offsets[0] <= offsets[1] <= ... <= offsets[G] = T; rows
///   offsets[g] .. offsets[g+1]-1 belong to expert g (an expert may have none).
/// Valid when T, N, K, G >= 0, K % 16 == 0 and the offsets are as above; a pointer may be
/// null only where its buffer is empty (group_offsets never: it has G+1 entries).
struct W4a8GroupedGemmProblem {
  int T = 0, N = 0, K = 0, G = 0;
  const uint8_t* x = nullptr;
  const float* x_scales = nullptr;
  const uint8_t* w = nullptr;
  const uint8_t* w_scales = nullptr;
  const float* w_global = nullptr;
  const int* group_offsets = nullptr;
};

/// Empty when `p` is valid (see W4a8GroupedGemmProblem); otherwise what is wrong with it,
/// naming the first offending offset. Reads the G+1 offsets, nothing else.
std::string w4a8_grouped_gemm_problem_error(const W4a8GroupedGemmProblem& p);

/// CPU oracle. y is T*N floats, row-major. For row t of expert g each output is exactly
///   float s = 0;
///   for k = 0..K-1: s += e4m3(x[t][k]) * (e2m1(w[g][n][k]) * e4m3(w_scales[g][n][k/16]));
///   y[t][n] = x_scales[t] * (w_global[g] * s);
/// (one FP32 accumulator, k in increasing order, the block scale inside every product, all
/// products exact; then two FP32 multiplications in the order shown), whatever `threads`
/// is (0: hardware concurrency): bit-identical for any thread count. Returns false and sets
/// *err (if not null) on an invalid problem, leaving y untouched. Holds (T + N * non-empty
/// experts) * K floats while it runs.
[[nodiscard]] bool oracle_w4a8_grouped_gemm_cpu(const W4a8GroupedGemmProblem& p, float* y,
                                                std::string* err, int threads = 0);

/// GPU oracle on the current CUDA device: decodes x and dequantizes each expert's weights to
/// FP32 on the device, then one cuBLAS SGEMM (CUBLAS_PEDANTIC_MATH, no TF32, alpha 1) per
/// non-empty expert, then y[t][n] = x_scales[t] * (w_global[g] * s) on the device as on the
/// CPU. Same products as the CPU oracle; cuBLAS chooses the summation order, so outputs
/// agree with the CPU oracle's within the FP32 dot-product error bound, not bit for bit.
/// y is T*N host floats. Returns false and sets *err (naming the failing CUDA/cuBLAS call)
/// on any error or an invalid problem; device memory is freed on every path.
[[nodiscard]] bool oracle_w4a8_grouped_gemm_gpu(const W4a8GroupedGemmProblem& p, float* y,
                                                std::string* err);

}  // namespace fp4arena
