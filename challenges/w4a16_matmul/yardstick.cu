#include "challenges/w4a16_matmul/yardstick.h"

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "reference/fp4_codecs.h"

namespace fp4arena {
namespace {

// Decode table filled from reference/fp4_codecs (the one place the format is decoded).
__constant__ float kE2m1[16];

// w: [rows][K/2] packed, s: [rows][K/group] FP16 -> out: [rows][K] FP16.
__global__ void dequantize_w4a16(const uint8_t* w, const __half* s, __half* out, int64_t rows,
                                 int K, int group) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;  // byte index
  if (i >= rows * (K / 2)) return;
  int64_t r = i / (K / 2);
  int k = static_cast<int>(i % (K / 2)) * 2;
  float scale = __half2float(s[r * (K / group) + k / group]);
  uint8_t v = w[i];
  out[r * K + k] = __float2half_rn(kE2m1[v & 0xF] * scale);
  out[r * K + k + 1] = __float2half_rn(kE2m1[v >> 4] * scale);
}

bool cuda_ok(cudaError_t e, const char* what, std::string* err) {
  if (e == cudaSuccess) return true;
  *err = std::string("yardstick: ") + what + ": " + cudaGetErrorString(e);
  return false;
}

class CublasW4a16 : public Yardstick {
 public:
  ~CublasW4a16() override {
    for (void* p : ptrs_) cudaFree(p);
    if (handle_) cublasDestroy(handle_);
  }

  bool init(const W4a16MatmulProblem& p, std::string* err) {
    float e2m1[16];
    for (int i = 0; i < 16; ++i) e2m1[i] = e2m1_decode(uint8_t(i));
    if (!cuda_ok(cudaMemcpyToSymbol(kE2m1, e2m1, sizeof e2m1), "cudaMemcpyToSymbol", err)) {
      return false;
    }
    M_ = p.M, N_ = p.N, K_ = p.K;
    const int64_t M = p.M, N = p.N, K = p.K, G = p.K / p.group_size;
    uint8_t* dw;
    __half* ds;
    if (!alloc(&dw, N * K / 2, err) || !alloc(&ds, N * G * 2, err) || !alloc(&x_, M * K * 2, err) ||
        !alloc(&wh_, N * K * 2, err) || !alloc(&y_, M * N * 2, err)) {
      return false;
    }
    if (!cuda_ok(cudaMemcpy(x_, p.x, M * K * 2, cudaMemcpyHostToDevice), "cudaMemcpy x", err) ||
        !cuda_ok(cudaMemcpy(dw, p.w, N * K / 2, cudaMemcpyHostToDevice), "cudaMemcpy w", err) ||
        !cuda_ok(cudaMemcpy(ds, p.w_scales, N * G * 2, cudaMemcpyHostToDevice),
                 "cudaMemcpy w_scales", err)) {
      return false;
    }
    dequantize_w4a16<<<unsigned((N * K / 2 + 255) / 256), 256>>>(dw, ds, wh_, N, int(K),
                                                                 p.group_size);
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
    const float alpha = 1.f, beta = 0.f;
    // Row-major y[M][N] = x[M][K] w[N][K]^T is column-major y^T = w x^T.
    cublasStatus_t st = cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, N_, M_, K_, &alpha, wh_,
                                     CUDA_R_16F, K_, x_, CUDA_R_16F, K_, &beta, y_, CUDA_R_16F, N_,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
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
  __half *x_ = nullptr, *wh_ = nullptr, *y_ = nullptr;
  int M_ = 0, N_ = 0, K_ = 0;
};

}  // namespace

std::unique_ptr<Yardstick> make_cublas_w4a16_yardstick(const W4a16MatmulProblem& p,
                                                       std::string* err) {
  auto y = std::make_unique<CublasW4a16>();
  if (!y->init(p, err)) return nullptr;
  return y;
}

}  // namespace fp4arena
