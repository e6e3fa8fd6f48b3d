// CPU oracle. Every output is computed as
//   float s = 0; for k = 0..K-1: s += a[m][k] * b[n][k];  c = alpha * s;
// exactly, whatever the thread count or tiling (reference/cpu_gemm.h). Products of two dequantized
// NVFP4 elements are exact in FP32 (at most 5 significant bits each, magnitudes within
// [2^-20, 2^23]), so a fused multiply-add, if the compiler contracts to one, gives the same
// bits as a multiply then an add.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "reference/cpu_gemm.h"
#include "reference/fp4_codecs.h"
#include "reference/oracle.h"

namespace fp4arena {

void oracle_fp32_cpu(const Nvfp4MatmulProblem& p, float* c, int threads) {
  using namespace cpu_gemm;
  if (p.M <= 0 || p.N <= 0) return;
  const size_t M = p.M, N = p.N;
  if (p.K <= 0) {
    std::fill(c, c + M * N, 0.0f);
    return;
  }
  const size_t K = p.K;
  threads = ResolveThreads(threads);

  float e2m1[16];
  for (int i = 0; i < 16; ++i) e2m1[i] = e2m1_decode(static_cast<uint8_t>(i));
  float e4m3[256];
  for (int i = 0; i < 256; ++i) e4m3[i] = e4m3_decode(static_cast<uint8_t>(i));
  const size_t bytes_per_row = K / 2, scales_per_row = K / 16;

  std::vector<float> a(PaddedRows(M) * K, 0.0f);
  std::vector<float> bp(PanelFloats(N, K), 0.0f);
  ParallelFor(threads, M + N, [&](size_t row) {
    const bool is_a = row < M;
    const size_t r = is_a ? row : row - M;
    const uint8_t* packed = (is_a ? p.a : p.b) + r * bytes_per_row;
    const uint8_t* scales = (is_a ? p.a_scales : p.b_scales) + r * scales_per_row;
    float* out = is_a ? a.data() + r * K : bp.data() + PanelIndex(r, 0, K);
    const size_t stride = is_a ? 1 : kNr;
    for (size_t k = 0; k < K; k += 2) {
      const float s = e4m3[scales[k / 16]];
      const uint8_t byte = packed[k / 2];
      out[k * stride] = e2m1[byte & 0xF] * s;
      out[(k + 1) * stride] = e2m1[byte >> 4] * s;
    }
  });

  const float alpha = p.alpha;
  GroupedGemm({GemmPart{a.data(), M, bp.data()}}, N, K, threads,
              [&](size_t, size_t m, size_t n, float s) { c[m * N + n] = alpha * s; });
}

}  // namespace fp4arena
