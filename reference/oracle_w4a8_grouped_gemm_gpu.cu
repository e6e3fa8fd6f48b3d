// GPU W4A8 grouped oracle: x decoded to FP32 once, then per non-empty expert its weights
// dequantized into one reused FP32 buffer and one cuBLAS SGEMM (pedantic math, alpha 1) into
// that expert's rows of y; finally the scalings, on the device, in the CPU oracle's order.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/cuda_util.h"
#include "reference/gpu_dequantize.h"
#include "reference/oracle_w4a8_grouped_gemm.h"

namespace fp4arena {
namespace {

// y[t][n] = x_scale[t] * (w_global_of_row[t] * y[t][n]): two roundings, as on the CPU (no
// add, so nothing for the compiler to fuse).
__global__ void ScaleRowsKernel(float* __restrict__ y, size_t rows, size_t cols,
                                const float* __restrict__ x_scale,
                                const float* __restrict__ w_global_of_row) {
  const size_t n = rows * cols;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const size_t t = i / cols;
    y[i] = x_scale[t] * (w_global_of_row[t] * y[i]);
  }
}

}  // namespace

bool oracle_w4a8_grouped_gemm_gpu(const W4a8GroupedGemmProblem& p, float* y, std::string* err) {
  using cuda_util::CublasOk;
  using cuda_util::CudaOk;
  using cuda_util::DeviceBuffer;
  using gpu_dequantize::DecodeTables;
  const std::string problem = w4a8_grouped_gemm_problem_error(p);
  if (!problem.empty()) {
    if (err != nullptr) *err = "oracle_w4a8_grouped_gemm_gpu: " + problem;
    return false;
  }
  const size_t T = p.T, N = p.N, K = p.K, G = p.G;
  if (T == 0 || N == 0) return true;
  if (y == nullptr) {
    if (err != nullptr) *err = "oracle_w4a8_grouped_gemm_gpu: y is null";
    return false;
  }
  const int* offsets = p.group_offsets;
  std::vector<float> w_global_of_row(T);
  for (size_t g = 0; g < G; ++g) {
    for (int t = offsets[g]; t < offsets[g + 1]; ++t) w_global_of_row[t] = p.w_global[g];
  }

  DeviceBuffer d_tables, d_x, d_w, d_w_scales, d_x_scales, d_wg_rows, d_xf, d_wf, d_y;
  if (!gpu_dequantize::UploadDecodeTables(&d_tables, err) ||
      !cuda_util::Upload(p.x, T * K, &d_x, "x", err) ||
      !cuda_util::Upload(p.w, G * N * K / 2, &d_w, "w", err) ||
      !cuda_util::Upload(p.w_scales, G * N * K / 16, &d_w_scales, "w_scales", err) ||
      !cuda_util::Upload(p.x_scales, T * sizeof(float), &d_x_scales, "x_scales", err) ||
      !cuda_util::Upload(w_global_of_row.data(), T * sizeof(float), &d_wg_rows, "w_global per row",
                         err) ||
      !CudaOk(d_xf.Allocate(T * K * sizeof(float)), "cudaMalloc (x fp32)", err) ||
      !CudaOk(d_wf.Allocate(N * K * sizeof(float)), "cudaMalloc (one expert's w fp32)", err) ||
      !CudaOk(d_y.Allocate(T * N * sizeof(float)), "cudaMalloc (y fp32)", err)) {
    return false;
  }
  const DecodeTables* tables = d_tables.as<DecodeTables>();
  if (!gpu_dequantize::LaunchDecodeE4m3(d_x.as<uint8_t>(), T * K, tables, d_xf.as<float>(), err)) {
    return false;
  }

  cuda_util::CublasHandle handle;
  if (!cuda_util::CreatePedanticCublas(&handle, err)) return false;
  // K == 0: every sum is 0 (cuBLAS would reject the leading dimension 0).
  if (K == 0 &&
      !CudaOk(cudaMemset(d_y.as<void>(), 0, T * N * sizeof(float)), "cudaMemset (y fp32)", err)) {
    return false;
  }
  const float one = 1.0f, zero = 0.0f;
  for (size_t g = 0; g < G && K > 0; ++g) {
    const int rows = offsets[g + 1] - offsets[g];
    if (rows == 0) continue;
    const std::string expert = " (expert " + std::to_string(g) + ")";
    // The kernel and the SGEMM run in order on the default stream, so the next expert's
    // dequantization waits for this SGEMM to finish reading d_wf.
    if (!gpu_dequantize::LaunchDequantizeNvfp4(d_w.as<uint8_t>() + g * N * K / 2,
                                               d_w_scales.as<uint8_t>() + g * N * K / 16, N * K,
                                               tables, d_wf.as<float>(), err)) {
      if (err != nullptr) *err += expert;
      return false;
    }
    // Row-major y_g[rows][N] = x_g[rows][K] w_g[N][K]^T is column-major y_g^T = w_g x_g^T,
    // where the row-major x_g and w_g read column-major are x_g^T (K x rows), w_g^T (K x N).
    const size_t row0 = offsets[g];
    if (!CublasOk(cublasSgemm(handle.get(), CUBLAS_OP_T, CUBLAS_OP_N, p.N, rows, p.K, &one,
                              d_wf.as<float>(), p.K, d_xf.as<float>() + row0 * K, p.K, &zero,
                              d_y.as<float>() + row0 * N, p.N),
                  "cublasSgemm" + expert, err)) {
      return false;
    }
  }
  const size_t wanted = (T * N + 255) / 256;
  ScaleRowsKernel<<<static_cast<unsigned>(wanted < 65536 ? wanted : 65536), 256>>>(
      d_y.as<float>(), T, N, d_x_scales.as<float>(), d_wg_rows.as<float>());
  if (!CudaOk(cudaGetLastError(), "ScaleRowsKernel launch", err) ||
      !CudaOk(cudaDeviceSynchronize(), "cudaDeviceSynchronize (dequantize, SGEMMs, scaling)",
              err)) {
    return false;
  }
  return CudaOk(cudaMemcpy(y, d_y.as<void>(), T * N * sizeof(float), cudaMemcpyDeviceToHost),
                "cudaMemcpy D2H (y)", err);
}

}  // namespace fp4arena
