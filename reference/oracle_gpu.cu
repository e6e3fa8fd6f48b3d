// GPU oracle: dequantize both operands to FP32 on the device, then one cuBLAS SGEMM in
// pedantic math mode. The decode tables are filled on the host by fp4_codecs and uploaded, so
// the GPU reads the formats exactly as the CPU oracle does.
#include <cstddef>
#include <cstdint>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "reference/fp4_codecs.h"
#include "reference/oracle.h"

namespace fp4arena {
namespace {

struct DecodeTables {
  float e2m1[16];
  float e4m3[256];
};

// out[r][k] = e2m1(nibble) * e4m3(scale); one thread per packed byte, two outputs each.
// The tables come from global memory and are staged in shared memory per block.
__global__ void DequantizeKernel(const uint8_t* __restrict__ packed,
                                 const uint8_t* __restrict__ scales, size_t bytes,
                                 const DecodeTables* __restrict__ tables,
                                 float2* __restrict__ out) {
  __shared__ float e2m1[16];
  __shared__ float e4m3[256];
  for (int i = threadIdx.x; i < 256; i += blockDim.x) {
    e4m3[i] = tables->e4m3[i];
    if (i < 16) e2m1[i] = tables->e2m1[i];
  }
  __syncthreads();
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < bytes;
       i += stride) {
    // Each row holds a whole number of 16-element blocks, so the scale of byte i is simply
    // scales[i / 8] across rows.
    const float s = e4m3[scales[i / 8]];
    const uint8_t b = packed[i];
    out[i] = make_float2(e2m1[b & 0xF] * s, e2m1[b >> 4] * s);
  }
}

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  cudaError_t Allocate(size_t bytes) { return cudaMalloc(&ptr_, bytes); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
};

class CublasHandle {
 public:
  CublasHandle() = default;
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  ~CublasHandle() {
    if (handle_ != nullptr) cublasDestroy(handle_);
  }
  cublasStatus_t Create() { return cublasCreate(&handle_); }
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

bool CudaOk(cudaError_t e, const char* call, std::string* err) {
  if (e == cudaSuccess) return true;
  if (err != nullptr) {
    *err = std::string(call) + " failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
  }
  return false;
}

bool CublasOk(cublasStatus_t s, const char* call, std::string* err) {
  if (s == CUBLAS_STATUS_SUCCESS) return true;
  if (err != nullptr) {
    *err =
        std::string(call) + " failed: " + cublasGetStatusName(s) + ": " + cublasGetStatusString(s);
  }
  return false;
}

// Uploads one NVFP4 operand ([rows][k/2] bytes, [rows][k/16] scales) and dequantizes it into
// out (rows * k floats, already allocated). The staging buffers are freed on return.
bool UploadAndDequantize(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t k,
                         const DecodeTables* tables, float* out, const char* name,
                         std::string* err) {
  const size_t bytes = rows * k / 2, scale_bytes = rows * k / 16;
  DeviceBuffer d_packed, d_scales;
  const std::string what = std::string(" (") + name + ")";
  if (!CudaOk(d_packed.Allocate(bytes), ("cudaMalloc" + what).c_str(), err) ||
      !CudaOk(d_scales.Allocate(scale_bytes), ("cudaMalloc scales" + what).c_str(), err) ||
      !CudaOk(cudaMemcpy(d_packed.as<void>(), packed, bytes, cudaMemcpyHostToDevice),
              ("cudaMemcpy H2D" + what).c_str(), err) ||
      !CudaOk(cudaMemcpy(d_scales.as<void>(), scales, scale_bytes, cudaMemcpyHostToDevice),
              ("cudaMemcpy H2D scales" + what).c_str(), err)) {
    return false;
  }
  constexpr int kThreads = 256;
  const size_t wanted = (bytes + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(wanted < 65536 ? wanted : 65536);
  DequantizeKernel<<<blocks, kThreads>>>(d_packed.as<uint8_t>(), d_scales.as<uint8_t>(), bytes,
                                         tables, reinterpret_cast<float2*>(out));
  if (!CudaOk(cudaGetLastError(), ("DequantizeKernel launch" + what).c_str(), err)) return false;
  // Synchronize before the staging buffers go (cudaFree would too, but without a check).
  return CudaOk(cudaDeviceSynchronize(), ("DequantizeKernel" + what).c_str(), err);
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

  DecodeTables tables;
  for (int i = 0; i < 16; ++i) tables.e2m1[i] = e2m1_decode(static_cast<uint8_t>(i));
  for (int i = 0; i < 256; ++i) tables.e4m3[i] = e4m3_decode(static_cast<uint8_t>(i));

  DeviceBuffer d_tables, d_a, d_b, d_c;
  if (!CudaOk(d_tables.Allocate(sizeof tables), "cudaMalloc (decode tables)", err) ||
      !CudaOk(cudaMemcpy(d_tables.as<void>(), &tables, sizeof tables, cudaMemcpyHostToDevice),
              "cudaMemcpy H2D (decode tables)", err) ||
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

  CublasHandle handle;
  if (!CublasOk(handle.Create(), "cublasCreate", err) ||
      !CublasOk(cublasSetMathMode(handle.get(), CUBLAS_PEDANTIC_MATH),
                "cublasSetMathMode(CUBLAS_PEDANTIC_MATH)", err)) {
    return false;
  }
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
