// The speed yardstick of the W4A16 matmul: cuBLAS FP16 GEMM (FP32 accumulation, FP16 output)
// on weights dequantized to FP16 beforehand (untimed).
#pragma once

#include <memory>
#include <string>

#include "harness/challenge.h"
#include "reference/oracle_w4a16_matmul.h"

namespace fp4arena {

/// Uploads x and the weights, dequantizes the weights to FP16 on the current device (untimed:
/// w_deq = fp16_rne(e2m1 * scale)) and returns a yardstick whose launch() enqueues one cuBLAS
/// FP16 GEMM, y = x * w_deq^T with FP16 output, on the default stream. nullptr + *err on any
/// CUDA/cuBLAS error.
std::unique_ptr<Yardstick> make_cublas_w4a16_yardstick(const W4a16MatmulProblem& p,
                                                       std::string* err);

}  // namespace fp4arena
