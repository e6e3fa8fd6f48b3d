// GPU W4A16 oracle: x converted and w dequantized to FP32 on the device
// (reference/gpu_dequantize.h), then one cuBLAS SGEMM in pedantic math mode.
#include <cstddef>
#include <cstdint>
#include <string>

#include "reference/cuda_util.h"
#include "reference/gpu_dequantize.h"
#include "reference/oracle_w4a16_matmul.h"

namespace fp4arena {

bool oracle_w4a16_matmul_gpu(const W4a16MatmulProblem& p, float* y, std::string* err) {
  using cuda_util::CublasOk;
  using cuda_util::CudaOk;
  using cuda_util::DeviceBuffer;
  const std::string problem = w4a16_matmul_problem_error(p);
  if (!problem.empty()) {
    if (err != nullptr) *err = "oracle_w4a16_matmul_gpu: " + problem;
    return false;
  }
  const size_t M = p.M, N = p.N, K = p.K, group = p.group_size;
  if (M == 0 || N == 0) return true;
  if (y == nullptr) {
    if (err != nullptr) *err = "oracle_w4a16_matmul_gpu: y is null";
    return false;
  }
  if (K == 0) {
    for (size_t i = 0; i < M * N; ++i) y[i] = 0.0f;
    return true;
  }

  DeviceBuffer d_tables, d_x, d_w, d_scales, d_xf, d_wf, d_y;
  if (!gpu_dequantize::UploadDecodeTables(&d_tables, err) ||
      !cuda_util::Upload(p.x, M * K * sizeof(__half), &d_x, "x", err) ||
      !cuda_util::Upload(p.w, N * K / 2, &d_w, "w", err) ||
      !cuda_util::Upload(p.w_scales, N * (K / group) * sizeof(__half), &d_scales, "w_scales",
                         err) ||
      !CudaOk(d_xf.Allocate(M * K * sizeof(float)), "cudaMalloc (x fp32)", err) ||
      !CudaOk(d_wf.Allocate(N * K * sizeof(float)), "cudaMalloc (w fp32)", err) ||
      !CudaOk(d_y.Allocate(M * N * sizeof(float)), "cudaMalloc (y fp32)", err) ||
      !gpu_dequantize::LaunchHalfToFloat(d_x.as<__half>(), M * K, d_xf.as<float>(), err) ||
      !gpu_dequantize::LaunchDequantizeE2m1HalfScales(
          d_w.as<uint8_t>(), d_scales.as<__half>(), N * K, group,
          d_tables.as<gpu_dequantize::DecodeTables>(), d_wf.as<float>(), err)) {
    return false;
  }

  cuda_util::CublasHandle handle;
  if (!cuda_util::CreatePedanticCublas(&handle, err)) return false;
  // Row-major y[M][N] = x[M][K] w[N][K]^T is column-major y^T[N][M] = w x^T, where the
  // row-major x and w read column-major are x^T (K x M) and w^T (K x N).
  const float one = 1.0f, zero = 0.0f;
  if (!CublasOk(
          cublasSgemm(handle.get(), CUBLAS_OP_T, CUBLAS_OP_N, p.N, p.M, p.K, &one, d_wf.as<float>(),
                      p.K, d_xf.as<float>(), p.K, &zero, d_y.as<float>(), p.N),
          "cublasSgemm", err) ||
      !CudaOk(cudaDeviceSynchronize(), "cudaDeviceSynchronize (dequantize, SGEMM)", err)) {
    return false;
  }
  return CudaOk(cudaMemcpy(y, d_y.as<void>(), M * N * sizeof(float), cudaMemcpyDeviceToHost),
                "cudaMemcpy D2H (y)", err);
}

}  // namespace fp4arena
