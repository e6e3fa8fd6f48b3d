#include "challenges/nvfp4_matmul/yardstick.h"

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

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

bool cuda_ok(cudaError_t e, const char* what, std::string* err) {
  if (e == cudaSuccess) return true;
  *err = std::string("yardstick: ") + what + ": " + cudaGetErrorString(e);
  return false;
}

class CublasFp16Gemm : public Yardstick {
 public:
  ~CublasFp16Gemm() override {
    for (void* p : ptrs_) cudaFree(p);
    if (handle_) cublasDestroy(handle_);
  }

  bool init(const Nvfp4MatmulProblem& p, std::string* err) {
    float e2m1[16], e4m3[256];
    for (int i = 0; i < 16; ++i) e2m1[i] = e2m1_decode(uint8_t(i));
    for (int i = 0; i < 256; ++i) {
      e4m3[i] = e4m3_is_nan(uint8_t(i)) ? 0.f : e4m3_decode(uint8_t(i));
    }
    if (!cuda_ok(cudaMemcpyToSymbol(kE2m1, e2m1, sizeof e2m1), "cudaMemcpyToSymbol", err) ||
        !cuda_ok(cudaMemcpyToSymbol(kE4m3, e4m3, sizeof e4m3), "cudaMemcpyToSymbol", err)) {
      return false;
    }
    M_ = p.M, N_ = p.N, K_ = p.K;
    alpha_ = p.alpha;
    const int64_t M = p.M, N = p.N, K = p.K;
    uint8_t *da, *das, *db, *dbs;
    if (!alloc(&da, M * K / 2, err) || !alloc(&das, M * K / 16, err) ||
        !alloc(&db, N * K / 2, err) || !alloc(&dbs, N * K / 16, err) ||
        !alloc(&ha_, M * K * 2, err) || !alloc(&hb_, N * K * 2, err) ||
        !alloc(&hc_, M * N * 2, err)) {
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
    dequantize_fp16<<<unsigned((M * K / 2 + 255) / 256), 256>>>(da, das, ha_, M, int(K));
    dequantize_fp16<<<unsigned((N * K / 2 + 255) / 256), 256>>>(db, dbs, hb_, N, int(K));
    if (!cuda_ok(cudaGetLastError(), "dequantize launch", err) ||
        !cuda_ok(cudaDeviceSynchronize(), "dequantize", err)) {
      return false;
    }
    if (cublasCreate(&handle_) != CUBLAS_STATUS_SUCCESS) {
      *err = "yardstick: cublasCreate failed";
      return false;
    }
    return true;
  }

  bool launch(std::string* err) override {
    const float beta = 0.f;
    // Row-major C[M][N] = A[M][K] B[N][K]^T is column-major C^T = B A^T.
    cublasStatus_t st = cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, N_, M_, K_, &alpha_, hb_,
                                     CUDA_R_16F, K_, ha_, CUDA_R_16F, K_, &beta, hc_, CUDA_R_16F,
                                     N_, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) {
      *err = "yardstick: cublasGemmEx failed with status " + std::to_string(int(st));
      return false;
    }
    return true;
  }

 private:
  template <typename T>
  bool alloc(T** p, int64_t bytes, std::string* err) {
    if (!cuda_ok(cudaMalloc(reinterpret_cast<void**>(p), size_t(bytes)), "cudaMalloc", err)) {
      return false;
    }
    ptrs_.push_back(*p);
    return true;
  }

  std::vector<void*> ptrs_;
  cublasHandle_t handle_ = nullptr;
  __half *ha_ = nullptr, *hb_ = nullptr, *hc_ = nullptr;
  int M_ = 0, N_ = 0, K_ = 0;
  float alpha_ = 1;
};

}  // namespace

std::unique_ptr<Yardstick> make_cublas_fp16_gemm(const Nvfp4MatmulProblem& p, std::string* err) {
  auto y = std::make_unique<CublasFp16Gemm>();
  if (!y->init(p, err)) return nullptr;
  return y;
}

}  // namespace fp4arena
