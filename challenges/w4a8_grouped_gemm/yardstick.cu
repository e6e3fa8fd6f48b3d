#include "challenges/w4a8_grouped_gemm/yardstick.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
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

// x: [T][K] E4M3 -> out: [T][K] BF16 of e4m3(x) * x_scales[t].
__global__ void dequantize_x(const uint8_t* x, const float* x_scales, __nv_bfloat16* out, int64_t T,
                             int64_t K) {
  const int64_t n = T * K;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[i] = __float2bfloat16_rn(kE4m3[x[i]] * x_scales[i / K]);
  }
}

// w: [G][N][K/2] packed, s: [G][N][K/16] -> out: [G][N][K] BF16 of e2m1 * e4m3 * w_global[g].
__global__ void dequantize_w(const uint8_t* w, const uint8_t* s, const float* w_global,
                             __nv_bfloat16* out, int64_t G, int64_t N, int64_t K) {
  const int64_t bytes = G * N * K / 2;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < bytes;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = (i % (K / 2)) * 2;
    const int64_t row = i / (K / 2);  // g * N + n
    const float scale = kE4m3[s[row * (K / 16) + k / 16]] * w_global[row / N];
    const uint8_t v = w[i];
    out[row * K + k] = __float2bfloat16_rn(kE2m1[v & 0xF] * scale);
    out[row * K + k + 1] = __float2bfloat16_rn(kE2m1[v >> 4] * scale);
  }
}

bool cuda_ok(cudaError_t e, const char* what, std::string* err) {
  if (e == cudaSuccess) return true;
  *err = std::string("yardstick: ") + what + ": " + cudaGetErrorString(e);
  return false;
}

class CublasBf16GroupedGemm : public Yardstick {
 public:
  ~CublasBf16GroupedGemm() override {
    for (void* p : ptrs_) cudaFree(p);
    if (handle_) cublasDestroy(handle_);
  }

  bool init(const W4a8GroupedGemmProblem& p, std::string* err) {
    float e2m1[16], e4m3[256];
    for (int i = 0; i < 16; ++i) e2m1[i] = e2m1_decode(uint8_t(i));
    for (int i = 0; i < 256; ++i) {
      e4m3[i] = e4m3_is_nan(uint8_t(i)) ? 0.f : e4m3_decode(uint8_t(i));
    }
    if (!cuda_ok(cudaMemcpyToSymbol(kE2m1, e2m1, sizeof e2m1), "cudaMemcpyToSymbol", err) ||
        !cuda_ok(cudaMemcpyToSymbol(kE4m3, e4m3, sizeof e4m3), "cudaMemcpyToSymbol", err)) {
      return false;
    }
    const int64_t T = p.T, N = p.N, K = p.K, G = p.G;
    uint8_t *dx, *dw, *dws;
    float *dxs, *dwg;
    if (!alloc(&dx, T * K, err) || !alloc(&dxs, T * 4, err) || !alloc(&dw, G * N * K / 2, err) ||
        !alloc(&dws, G * N * K / 16, err) || !alloc(&dwg, G * 4, err) ||
        !alloc(&xb_, T * K * 2, err) || !alloc(&wb_, G * N * K * 2, err) ||
        !alloc(&yb_, T * N * 2, err)) {
      return false;
    }
    if (!cuda_ok(cudaMemcpy(dx, p.x, T * K, cudaMemcpyHostToDevice), "cudaMemcpy x", err) ||
        !cuda_ok(cudaMemcpy(dxs, p.x_scales, T * 4, cudaMemcpyHostToDevice), "cudaMemcpy", err) ||
        !cuda_ok(cudaMemcpy(dw, p.w, G * N * K / 2, cudaMemcpyHostToDevice), "cudaMemcpy w", err) ||
        !cuda_ok(cudaMemcpy(dws, p.w_scales, G * N * K / 16, cudaMemcpyHostToDevice), "cudaMemcpy",
                 err) ||
        !cuda_ok(cudaMemcpy(dwg, p.w_global, G * 4, cudaMemcpyHostToDevice), "cudaMemcpy", err)) {
      return false;
    }
    dequantize_x<<<4096, 256>>>(dx, dxs, xb_, T, K);
    dequantize_w<<<8192, 256>>>(dw, dws, dwg, wb_, G, N, K);
    if (!cuda_ok(cudaGetLastError(), "dequantize launch", err) ||
        !cuda_ok(cudaDeviceSynchronize(), "dequantize", err)) {
      return false;
    }
    // One group per non-empty expert (group size 1): column-major y_g^T [N][rows] =
    // w_g^T^T x_g^T, i.e. m = N, n = rows, k = K, A = w_g read transposed (lda K), B = x_g
    // (ldb K), C = y_g (ldc N). Pointer arrays live on the device, sizes on the host.
    std::vector<const void*> a, b;
    std::vector<void*> c;
    for (int64_t g = 0; g < G; ++g) {
      const int rows = p.group_offsets[g + 1] - p.group_offsets[g];
      if (rows == 0) continue;
      a.push_back(wb_ + g * N * K);
      b.push_back(xb_ + int64_t(p.group_offsets[g]) * K);
      c.push_back(yb_ + int64_t(p.group_offsets[g]) * N);
      m_.push_back(int(N));
      n_.push_back(rows);
      k_.push_back(int(K));
      lda_.push_back(int(K));
      ldb_.push_back(int(K));
      ldc_.push_back(int(N));
      transa_.push_back(CUBLAS_OP_T);
      transb_.push_back(CUBLAS_OP_N);
      alpha_.push_back(1.0f);
      beta_.push_back(0.0f);
      size_.push_back(1);
    }
    const size_t groups = a.size();
    if (!alloc(&da_, groups * sizeof(void*), err) || !alloc(&db_, groups * sizeof(void*), err) ||
        !alloc(&dc_, groups * sizeof(void*), err) ||
        !cuda_ok(cudaMemcpy(da_, a.data(), groups * sizeof(void*), cudaMemcpyHostToDevice),
                 "cudaMemcpy A array", err) ||
        !cuda_ok(cudaMemcpy(db_, b.data(), groups * sizeof(void*), cudaMemcpyHostToDevice),
                 "cudaMemcpy B array", err) ||
        !cuda_ok(cudaMemcpy(dc_, c.data(), groups * sizeof(void*), cudaMemcpyHostToDevice),
                 "cudaMemcpy C array", err)) {
      return false;
    }
    if (cublasCreate(&handle_) != CUBLAS_STATUS_SUCCESS) {
      *err = "yardstick: cublasCreate failed";
      return false;
    }
    return true;
  }

  bool launch(std::string* err) override {
    if (size_.empty()) return true;
    cublasStatus_t st = cublasGemmGroupedBatchedEx(
        handle_, transa_.data(), transb_.data(), m_.data(), n_.data(), k_.data(), alpha_.data(),
        da_, CUDA_R_16BF, lda_.data(), db_, CUDA_R_16BF, ldb_.data(), beta_.data(), dc_,
        CUDA_R_16BF, ldc_.data(), int(size_.size()), size_.data(), CUBLAS_COMPUTE_32F);
    if (st != CUBLAS_STATUS_SUCCESS) {
      *err = "yardstick: cublasGemmGroupedBatchedEx failed with status " + std::to_string(int(st));
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
  __nv_bfloat16 *xb_ = nullptr, *wb_ = nullptr, *yb_ = nullptr;
  const void** da_ = nullptr;
  const void** db_ = nullptr;
  void** dc_ = nullptr;
  std::vector<int> m_, n_, k_, lda_, ldb_, ldc_, size_;
  std::vector<cublasOperation_t> transa_, transb_;
  std::vector<float> alpha_, beta_;
};

}  // namespace

std::unique_ptr<Yardstick> make_cublas_bf16_grouped_gemm(const W4a8GroupedGemmProblem& p,
                                                         std::string* err) {
  auto y = std::make_unique<CublasBf16GroupedGemm>();
  if (!y->init(p, err)) return nullptr;
  return y;
}

}  // namespace fp4arena
