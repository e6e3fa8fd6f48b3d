// GPU oracle: dequantize both operands to FP32 on the device (reference/gpu_dequantize.h),
// then one cuBLAS SGEMM in pedantic math mode.
#include <cstddef>
#include <cstdint>
#include <string>

#include "reference/cuda_util.h"
#include "reference/gpu_dequantize.h"
#include "reference/oracle.h"

namespace fp4arena {
namespace {

using cuda_util::CublasOk;
using cuda_util::CudaOk;
using cuda_util::DeviceBuffer;
using gpu_dequantize::DecodeTables;

// Uploads one NVFP4 operand ([rows][k/2] bytes, [rows][k/16] scales) and dequantizes it into
// out (rows * k floats, already allocated). The staging buffers are freed on return.
bool UploadAndDequantize(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t k,
                         const DecodeTables* tables, float* out, const char* name,
                         std::string* err) {
  DeviceBuffer d_packed, d_scales;
  const std::string what = name;
  if (!cuda_util::Upload(packed, rows * k / 2, &d_packed, what, err) ||
      !cuda_util::Upload(scales, rows * k / 16, &d_scales, what + " scales", err) ||
      !gpu_dequantize::LaunchDequantizeNvfp4(d_packed.as<uint8_t>(), d_scales.as<uint8_t>(),
                                             rows * k, tables, out, err)) {
    return false;
  }
  // Synchronize before the staging buffers go (cudaFree would too, but without a check).
  return CudaOk(cudaDeviceSynchronize(), "DequantizeNvfp4Kernel (" + what + ")", err);
}

}  // namespace

bool oracle_fp32_gpu(const Nvfp4MatmulProblem& p, float* c, std::string* err) {
  if (p.M < 0 || p.N < 0 || p.K < 0 || p.K % 16 != 0) {
    if (err != nullptr) *err = "oracle_fp32_gpu: bad shape (M, N, K >= 0, K % 16 == 0)";
    return false;
  }
  const size_t M = p.M, N = p.N, K = p.K;
  if (M == 0 || N == 0) return true;
  if (K == 0) {
    for (size_t i = 0; i < M * N; ++i) c[i] = 0.0f;
    return true;
  }

  DeviceBuffer d_tables, d_a, d_b, d_c;
  if (!gpu_dequantize::UploadDecodeTables(&d_tables, err) ||
      !CudaOk(d_a.Allocate(M * K * sizeof(float)), "cudaMalloc (A fp32)", err) ||
      !CudaOk(d_b.Allocate(N * K * sizeof(float)), "cudaMalloc (B fp32)", err) ||
      !CudaOk(d_c.Allocate(M * N * sizeof(float)), "cudaMalloc (C fp32)", err)) {
    return false;
  }
  if (!UploadAndDequantize(p.a, p.a_scales, M, K, d_tables.as<DecodeTables>(), d_a.as<float>(), "A",
                           err) ||
      !UploadAndDequantize(p.b, p.b_scales, N, K, d_tables.as<DecodeTables>(), d_b.as<float>(), "B",
                           err)) {
    return false;
  }

  cuda_util::CublasHandle handle;
  if (!cuda_util::CreatePedanticCublas(&handle, err)) return false;
  // Row-major C[M][N] = A[M][K] B[N][K]^T is column-major C^T[N][M] = B A^T, where the
  // row-major A and B read column-major are A^T (K x M) and B^T (K x N).
  const float alpha = p.alpha, zero = 0.0f;
  if (!CublasOk(
          cublasSgemm(handle.get(), CUBLAS_OP_T, CUBLAS_OP_N, p.N, p.M, p.K, &alpha,
                      d_b.as<float>(), p.K, d_a.as<float>(), p.K, &zero, d_c.as<float>(), p.N),
          "cublasSgemm", err)) {
    return false;
  }
  return CudaOk(cudaMemcpy(c, d_c.as<void>(), M * N * sizeof(float), cudaMemcpyDeviceToHost),
                "cudaMemcpy D2H (C)", err);
}

}  // namespace fp4arena
