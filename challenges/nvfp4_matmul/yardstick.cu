#include "challenges/nvfp4_matmul/yardstick.h"

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "harness/pre_call.h"
#include "reference/fp4_codecs.h"

namespace fp4arena {
namespace {

// Decode tables filled from reference/fp4_codecs (the one place the formats are decoded).
__constant__ float kE2m1[16];
__constant__ float kE4m3[256];

// x: [rows][K/2] packed, s: [rows][K/16] -> out: [rows][K] FP16 (exact).
__global__ void dequantize_fp16(const uint8_t* x, const uint8_t* s, __half* out, int64_t rows,
                                int K) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;  // byte index
  int64_t bytes = rows * (K / 2);
  if (i >= bytes) return;
  int64_t r = i / (K / 2);
  int k = static_cast<int>(i % (K / 2)) * 2;
  float scale = kE4m3[s[r * (K / 16) + k / 16]];
  uint8_t v = x[i];
  out[r * K + k] = __float2half_rn(kE2m1[v & 0xF] * scale);
  out[r * K + k + 1] = __float2half_rn(kE2m1[v >> 4] * scale);
}

class Holder {
 public:
  ~Holder() {
    for (void* p : ptrs_) cudaFree(p);
    if (handle_) cublasDestroy(handle_);
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
  }
  template <typename T>
  bool alloc(T** p, size_t bytes) {
    if (cudaMalloc(reinterpret_cast<void**>(p), bytes) != cudaSuccess) return false;
    ptrs_.push_back(*p);
    return true;
  }
  cublasHandle_t handle_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;

 private:
  std::vector<void*> ptrs_;
};

bool cuda_ok(cudaError_t e, const char* what, std::string* err) {
  if (e == cudaSuccess) return true;
  *err = std::string("yardstick: ") + what + ": " + cudaGetErrorString(e);
  return false;
}

}  // namespace

bool cublas_fp16_gemm_ms(const Nvfp4MatmulProblem& p, int samples, double* median_ms,
                         std::string* err) {
  float e2m1[16], e4m3[256];
  for (int i = 0; i < 16; ++i) e2m1[i] = e2m1_decode(uint8_t(i));
  for (int i = 0; i < 256; ++i) e4m3[i] = e4m3_is_nan(uint8_t(i)) ? 0.f : e4m3_decode(uint8_t(i));
  if (!cuda_ok(cudaMemcpyToSymbol(kE2m1, e2m1, sizeof e2m1), "cudaMemcpyToSymbol", err) ||
      !cuda_ok(cudaMemcpyToSymbol(kE4m3, e4m3, sizeof e4m3), "cudaMemcpyToSymbol", err)) {
    return false;
  }
  const int64_t M = p.M, N = p.N, K = p.K;
  Holder h;
  uint8_t *da, *das, *db, *dbs;
  __half *ha, *hb, *hc;
  PreCall pre_call;  // the same warm-up and L2 flush as before a solution's timed call
  if (!pre_call.init(1.0, err)) return false;
  if (!cuda_ok(h.alloc(&da, M * K / 2) && h.alloc(&das, M * K / 16) && h.alloc(&db, N * K / 2) &&
                       h.alloc(&dbs, N * K / 16) && h.alloc(&ha, M * K * 2) &&
                       h.alloc(&hb, N * K * 2) && h.alloc(&hc, M * N * 2)
                   ? cudaSuccess
                   : cudaErrorMemoryAllocation,
               "cudaMalloc", err)) {
    return false;
  }
  if (!cuda_ok(cudaMemcpy(da, p.a, M * K / 2, cudaMemcpyHostToDevice), "cudaMemcpy a", err) ||
      !cuda_ok(cudaMemcpy(das, p.a_scales, M * K / 16, cudaMemcpyHostToDevice), "cudaMemcpy",
               err) ||
      !cuda_ok(cudaMemcpy(db, p.b, N * K / 2, cudaMemcpyHostToDevice), "cudaMemcpy b", err) ||
      !cuda_ok(cudaMemcpy(dbs, p.b_scales, N * K / 16, cudaMemcpyHostToDevice), "cudaMemcpy",
               err)) {
    return false;
  }
  dequantize_fp16<<<unsigned((M * K / 2 + 255) / 256), 256>>>(da, das, ha, M, int(K));
  dequantize_fp16<<<unsigned((N * K / 2 + 255) / 256), 256>>>(db, dbs, hb, N, int(K));
  if (!cuda_ok(cudaGetLastError(), "dequantize launch", err) ||
      !cuda_ok(cudaDeviceSynchronize(), "dequantize", err)) {
    return false;
  }
  if (cublasCreate(&h.handle_) != CUBLAS_STATUS_SUCCESS) {
    *err = "yardstick: cublasCreate failed";
    return false;
  }
  if (!cuda_ok(cudaEventCreate(&h.start_), "cudaEventCreate", err) ||
      !cuda_ok(cudaEventCreate(&h.stop_), "cudaEventCreate", err)) {
    return false;
  }
  const float alpha = p.alpha, beta = 0.f;
  std::vector<double> times;
  for (int i = -2; i < samples; ++i) {  // two untimed warm-up calls
    if (!cuda_ok(pre_call.prepare(i), "L2 flush", err) ||
        !cuda_ok(pre_call.hold(), "blocking kernel", err)) {
      return false;
    }
    cudaEventRecord(h.start_);
    // Row-major C[M][N] = A[M][K] B[N][K]^T is column-major C^T = B A^T.
    cublasStatus_t st =
        cublasGemmEx(h.handle_, CUBLAS_OP_T, CUBLAS_OP_N, int(N), int(M), int(K), &alpha, hb,
                     CUDA_R_16F, int(K), ha, CUDA_R_16F, int(K), &beta, hc, CUDA_R_16F, int(N),
                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    cudaEventRecord(h.stop_);
    pre_call.release();
    if (st != CUBLAS_STATUS_SUCCESS) {
      *err = "yardstick: cublasGemmEx failed with status " + std::to_string(int(st));
      return false;
    }
    if (!cuda_ok(cudaEventSynchronize(h.stop_), "cublasGemmEx", err)) return false;
    float ms = 0;
    cudaEventElapsedTime(&ms, h.start_, h.stop_);
    if (i >= 0) times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  *median_ms = times.empty() ? 0 : times[times.size() / 2];
  return true;
}

}  // namespace fp4arena
