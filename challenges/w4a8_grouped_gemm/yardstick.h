// The speed yardstick of the W4A8 grouped GEMM: one cuBLAS BF16 grouped GEMM
// (cublasGemmGroupedBatchedEx, FP32 accumulation, BF16 output) over the non-empty experts, on
// operands dequantized to BF16 beforehand: x_bf16[t][k] = bf16(e4m3(x[t][k]) * x_scales[t]),
// w_bf16[g][n][k] = bf16(e2m1(w) * e4m3(w_scales) * w_global[g]). Both roundings to BF16
// make it a speed reference only, not an exact one.
#pragma once

#include <memory>
#include <string>

#include "harness/challenge.h"
#include "reference/oracle_w4a8_grouped_gemm.h"

namespace fp4arena {

/// Uploads and dequantizes the problem's operands on the current device (untimed) and
/// returns a yardstick whose launch() enqueues one cublasGemmGroupedBatchedEx on the default
/// stream: for every non-empty expert g, y[rows of g] = x_bf16[rows of g] * w_bf16[g]^T.
/// nullptr + *err on any CUDA/cuBLAS error.
std::unique_ptr<Yardstick> make_cublas_bf16_grouped_gemm(const W4a8GroupedGemmProblem& p,
                                                         std::string* err);

}  // namespace fp4arena
