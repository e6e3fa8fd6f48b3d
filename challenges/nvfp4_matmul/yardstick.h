// The speed yardstick of the NVFP4 matmul: cuBLAS FP16 GEMM (FP32 accumulation) on
// operands dequantized to FP16 beforehand (exactly: every e2m1 x e4m3 value fits FP16).
#pragma once

#include <string>

#include "reference/oracle.h"

namespace fp4arena {

/// Median time in ms of `samples` cuBLAS FP16 GEMMs (C = alpha * A * B^T, FP16 out) for
/// the problem's shape and data, each preceded by an L2 flush, timed with CUDA events on
/// the current device. The dequantization is done once, outside the timed region.
bool cublas_fp16_gemm_ms(const Nvfp4MatmulProblem& p, int samples, double* median_ms,
                         std::string* err);

}  // namespace fp4arena
