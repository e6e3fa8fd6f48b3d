// CPU W4A16 oracle: x and w dequantized to FP32 (exactly), then the blocked FP32 GEMM of
// reference/cpu_gemm.h, whose every output is a plain FP32 sum over k in increasing order.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "reference/cpu_gemm.h"
#include "reference/fp4_codecs.h"
#include "reference/oracle_w4a16_matmul.h"

namespace fp4arena {

std::string w4a16_matmul_problem_error(const W4a16MatmulProblem& p) {
  if (p.M < 0 || p.N < 0 || p.K < 0) return "M, N and K must be >= 0";
  if (p.K % 2 != 0) return "K must be even (two E2M1 codes per byte)";
  if (p.group_size <= 0) return "group_size must be > 0";
  if (p.K % p.group_size != 0) return "K must be a multiple of group_size";
  const bool has_k = p.K > 0;
  if (p.M > 0 && has_k && p.x == nullptr) return "x is null";
  if (p.N > 0 && has_k && (p.w == nullptr || p.w_scales == nullptr)) {
    return "w or w_scales is null";
  }
  return "";
}

bool oracle_w4a16_matmul_cpu(const W4a16MatmulProblem& p, float* y, std::string* err, int threads) {
  using namespace cpu_gemm;
  const std::string problem = w4a16_matmul_problem_error(p);
  if (!problem.empty()) {
    if (err != nullptr) *err = "oracle_w4a16_matmul_cpu: " + problem;
    return false;
  }
  const size_t M = p.M, N = p.N, K = p.K, group = p.group_size;
  if (M == 0 || N == 0) return true;
  if (y == nullptr) {
    if (err != nullptr) *err = "oracle_w4a16_matmul_cpu: y is null";
    return false;
  }
  if (K == 0) {
    std::fill(y, y + M * N, 0.0f);
    return true;
  }
  threads = ResolveThreads(threads);

  float e2m1[16];
  for (int i = 0; i < 16; ++i) e2m1[i] = e2m1_decode(static_cast<uint8_t>(i));
  std::vector<float> a(PaddedRows(M) * K, 0.0f);
  std::vector<float> bp(PanelFloats(N, K), 0.0f);
  ParallelFor(threads, M + N, [&](size_t row) {
    if (row < M) {
      const __half* src = p.x + row * K;
      float* dst = a.data() + row * K;
      for (size_t k = 0; k < K; ++k) dst[k] = __half2float(src[k]);
      return;
    }
    const size_t n = row - M;
    const uint8_t* packed = p.w + n * (K / 2);
    const __half* scales = p.w_scales + n * (K / group);
    float* dst = bp.data() + PanelIndex(n, 0, K);
    for (size_t k = 0; k < K; ++k) {
      const uint8_t code = (k & 1) ? packed[k / 2] >> 4 : packed[k / 2] & 0xF;
      dst[k * kNr] = e2m1[code] * __half2float(scales[k / group]);  // exact, see the header
    }
  });

  GroupedGemm({GemmPart{a.data(), M, bp.data()}}, N, K, threads,
              [&](size_t, size_t m, size_t n, float s) { y[m * N + n] = s; });
  return true;
}

}  // namespace fp4arena
