// GPU oracle vs CPU oracle vs the exact (double) result. Every test skips, with the CUDA
// error, where no CUDA device is usable.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "reference/nvfp4.h"
#include "reference/oracle.h"
#include "tests/reference/golden_cases.h"

namespace fp4arena {
namespace {

using testing::ExactMatmul;
using testing::ExactResult;
using testing::GoldenCase;
using testing::MakeRandomProblem;
using testing::RandomProblem;

// Empty when a CUDA device is usable, else why not.
std::string NoGpuReason() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return cudaGetErrorString(e);
  if (count == 0) return "cudaGetDeviceCount reports 0 devices";
  return "";
}

#define SKIP_WITHOUT_GPU()                                              \
  do {                                                                  \
    const std::string why = NoGpuReason();                              \
    if (!why.empty()) GTEST_SKIP() << "no CUDA GPU available: " << why; \
  } while (0)

constexpr double kTinyAbs = std::numeric_limits<float>::min();

std::vector<float> RunGpu(const Nvfp4MatmulProblem& p) {
  std::vector<float> c(static_cast<size_t>(p.M) * p.N, std::numeric_limits<float>::quiet_NaN());
  std::string err;
  EXPECT_TRUE(oracle_fp32_gpu(p, c.data(), &err)) << err;
  return c;
}

std::vector<float> RunCpu(const Nvfp4MatmulProblem& p) {
  std::vector<float> c(static_cast<size_t>(p.M) * p.N, std::numeric_limits<float>::quiet_NaN());
  oracle_fp32_cpu(p, c.data());
  return c;
}

// GPU within the FP32 bound of the exact result, and within twice it of the CPU oracle.
void CheckAgainstCpuAndExact(const Nvfp4MatmulProblem& p, const std::vector<double>& exact,
                             const std::vector<double>& bound, const std::string& what) {
  const std::vector<float> g = RunGpu(p);
  const std::vector<float> c = RunCpu(p);
  size_t bit_equal = 0;
  double worst = 0.0;
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_LE(std::fabs(g[i] - exact[i]), bound[i] + kTinyAbs)
        << what << " element " << i << ": gpu " << g[i] << " exact " << exact[i];
    ASSERT_LE(std::fabs(static_cast<double>(g[i]) - c[i]), 2 * bound[i] + kTinyAbs)
        << what << " element " << i << ": gpu " << g[i] << " cpu " << c[i];
    bit_equal += g[i] == c[i];
    if (bound[i] > 0) worst = std::max(worst, std::fabs(g[i] - exact[i]) / bound[i]);
  }
  std::printf("%s: %zu outputs, %zu bit-equal GPU vs CPU, worst |gpu - exact| / bound %.3g\n",
              what.c_str(), g.size(), bit_equal, worst);
}

TEST(GpuOracle, GoldenCases) {
  SKIP_WITHOUT_GPU();
  std::vector<GoldenCase> cases;
  std::string err;
  ASSERT_TRUE(testing::LoadGoldenCases(&cases, &err)) << err;
  for (const GoldenCase& g : cases) {
    const ExactResult exact = ExactMatmul(g.Problem());
    CheckAgainstCpuAndExact(g.Problem(), g.c_fp64, exact.bound, g.name);
  }
}

TEST(GpuOracle, RandomShapesWithTails) {
  SKIP_WITHOUT_GPU();
  struct Shape {
    int m, n, k;
    float alpha;
  };
  uint32_t seed = 100;
  for (const Shape& s : {Shape{1, 1, 16, 1.0f}, Shape{33, 17, 80, 0.5f}, Shape{129, 257, 528, 0.3f},
                         Shape{512, 384, 3072, 1.0f}}) {
    const RandomProblem r = MakeRandomProblem(s.m, s.n, s.k, s.alpha, ++seed);
    const ExactResult exact = ExactMatmul(r.Problem());
    CheckAgainstCpuAndExact(
        r.Problem(), exact.c, exact.bound,
        std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k));
  }
}

TEST(GpuOracle, DegenerateAndBadShapes) {
  SKIP_WITHOUT_GPU();
  Nvfp4MatmulProblem p;
  std::string err;
  p.M = 3;
  p.N = 0;
  p.K = 16;
  EXPECT_TRUE(oracle_fp32_gpu(p, nullptr, &err)) << err;
  p.N = 2;
  p.K = 0;
  std::vector<float> c(6, 1.0f);
  EXPECT_TRUE(oracle_fp32_gpu(p, c.data(), &err)) << err;
  for (float v : c) EXPECT_EQ(v, 0.0f);
  p.K = 24;
  EXPECT_FALSE(oracle_fp32_gpu(p, c.data(), &err));
  EXPECT_NE(err.find("bad shape"), std::string::npos) << err;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The table5 shape: prints the time of the whole oracle call and of the SGEMM alone (same
// call, same math mode, on the dequantized operands), median of 5 after a warm-up. Never
// fails on time; spot-checks some outputs against the exact result.
TEST(GpuOracleTiming, Table5Shape) {
  SKIP_WITHOUT_GPU();
  const int M = 2048, N = 18432, K = 3072;
  const RandomProblem r = MakeRandomProblem(M, N, K, 1.0f, 77);
  const Nvfp4MatmulProblem p = r.Problem();
  std::vector<float> c(static_cast<size_t>(M) * N);

  std::vector<double> whole_ms;
  for (int it = 0; it < 6; ++it) {
    std::string err;
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(oracle_fp32_gpu(p, c.data(), &err)) << err;
    const auto t1 = std::chrono::steady_clock::now();
    if (it > 0) whole_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }

  // Spot check: 256 random outputs against double, within the FP32 bound.
  const std::vector<float> a = nvfp4_dequantize(p.a, p.a_scales, M, K);
  const std::vector<float> b = nvfp4_dequantize(p.b, p.b_scales, N, K);
  std::mt19937 rng(5);
  for (int t = 0; t < 256; ++t) {
    const size_t m = rng() % M, n = rng() % N;
    double s = 0, s_abs = 0;
    for (size_t k = 0; k < static_cast<size_t>(K); ++k) {
      const double prod = static_cast<double>(a[m * K + k]) * b[n * K + k];
      s += prod;
      s_abs += std::fabs(prod);
    }
    ASSERT_LE(std::fabs(c[m * N + n] - s), K * std::ldexp(1.0, -24) * s_abs + kTinyAbs)
        << "(" << m << ", " << n << ")";
  }

  // SGEMM alone, timed with CUDA events.
  float *d_a = nullptr, *d_b = nullptr, *d_c = nullptr;
  ASSERT_EQ(cudaMalloc(&d_a, a.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_b, b.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_c, c.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_a, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_b, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
  cublasHandle_t h = nullptr;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH), CUBLAS_STATUS_SUCCESS);
  cudaEvent_t start, stop;
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&stop), cudaSuccess);
  const float alpha = 1.0f, zero = 0.0f;
  std::vector<double> sgemm_ms;
  for (int it = 0; it < 6; ++it) {
    ASSERT_EQ(cudaEventRecord(start), cudaSuccess);
    ASSERT_EQ(
        cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, d_b, K, d_a, K, &zero, d_c, N),
        CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cudaEventRecord(stop), cudaSuccess);
    ASSERT_EQ(cudaEventSynchronize(stop), cudaSuccess);
    float ms = 0;
    ASSERT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
    if (it > 0) sgemm_ms.push_back(ms);
  }
  // The same SGEMM as the oracle's, so its output is bit-identical to the oracle's.
  std::vector<float> c2(c.size());
  ASSERT_EQ(cudaMemcpy(c2.data(), d_c, c2.size() * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  size_t differ = 0;
  for (size_t i = 0; i < c.size(); ++i) differ += c[i] != c2[i];
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cublasDestroy(h);
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(d_c);

  cudaDeviceProp prop{};
  int dev = 0;
  cudaGetDevice(&dev);
  cudaGetDeviceProperties(&prop, dev);
  const double flop = 2.0 * M * N * K;
  const double whole = Median(whole_ms), sgemm = Median(sgemm_ms);
  std::printf("device: %s\n", prop.name);
  std::printf("oracle_fp32_gpu %dx%dx%d: whole call median %.2f ms (min %.2f, max %.2f)\n", M, N, K,
              whole, *std::min_element(whole_ms.begin(), whole_ms.end()),
              *std::max_element(whole_ms.begin(), whole_ms.end()));
  std::printf("SGEMM alone (pedantic): median %.3f ms (min %.3f, max %.3f), %.1f TFLOP/s\n", sgemm,
              *std::min_element(sgemm_ms.begin(), sgemm_ms.end()),
              *std::max_element(sgemm_ms.begin(), sgemm_ms.end()), flop / sgemm / 1e9);
  std::printf("SGEMM-alone output vs oracle output: %zu of %zu elements differ\n", differ,
              c.size());
}

}  // namespace
}  // namespace fp4arena
