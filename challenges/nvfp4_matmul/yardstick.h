// The speed yardstick of the NVFP4 matmul: cuBLAS FP16 GEMM (FP32 accumulation) on
// operands dequantized to FP16 beforehand (exactly: every e2m1 x e4m3 value fits FP16).
#pragma once

#include <memory>
#include <string>

#include "harness/challenge.h"
#include "reference/oracle.h"

namespace fp4arena {

/// Uploads and dequantizes the problem's operands on the current device (untimed) and
/// returns a yardstick whose launch() enqueues one cuBLAS FP16 GEMM, C = alpha * A * B^T
/// with FP16 output, on the default stream. nullptr + *err on any CUDA/cuBLAS error.
std::unique_ptr<Yardstick> make_cublas_fp16_gemm(const Nvfp4MatmulProblem& p, std::string* err);

}  // namespace fp4arena
