// CPU W4A8 grouped oracle: x and the weights of every non-empty expert dequantized to FP32
// (exactly), then the blocked FP32 GEMM of reference/cpu_gemm.h with one part per non-empty
// expert, whose every output is a plain FP32 sum over k in increasing order; the two
// scalings follow in the epilogue. Memory: (T + N * non-empty experts) * K floats.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "reference/cpu_gemm.h"
#include "reference/fp4_codecs.h"
#include "reference/oracle_w4a8_grouped_gemm.h"

namespace fp4arena {

std::string w4a8_grouped_gemm_problem_error(const W4a8GroupedGemmProblem& p) {
  if (p.T < 0 || p.N < 0 || p.K < 0 || p.G < 0) return "T, N, K and G must be >= 0";
  if (p.K % 16 != 0) return "K must be a multiple of 16";
  if (p.group_offsets == nullptr) return "group_offsets is null";
  const int* o = p.group_offsets;
  if (o[0] != 0) return "group_offsets[0] is " + std::to_string(o[0]) + ", not 0";
  for (int g = 0; g < p.G; ++g) {
    if (o[g + 1] < o[g]) {
      return "group_offsets decrease at expert " + std::to_string(g) + ": offsets[" +
             std::to_string(g) + "] = " + std::to_string(o[g]) + " > offsets[" +
             std::to_string(g + 1) + "] = " + std::to_string(o[g + 1]);
    }
  }
  if (o[p.G] != p.T) {
    return "group_offsets[G] is " + std::to_string(o[p.G]) + ", not T = " + std::to_string(p.T);
  }
  const bool has_k = p.K > 0;
  if (p.T > 0 && ((has_k && p.x == nullptr) || p.x_scales == nullptr)) {
    return "x or x_scales is null";
  }
  if (p.G > 0 && p.N > 0 &&
      ((has_k && (p.w == nullptr || p.w_scales == nullptr)) || p.w_global == nullptr)) {
    return "w, w_scales or w_global is null";
  }
  return "";
}

bool oracle_w4a8_grouped_gemm_cpu(const W4a8GroupedGemmProblem& p, float* y, std::string* err,
                                  int threads) {
  using namespace cpu_gemm;
  const std::string problem = w4a8_grouped_gemm_problem_error(p);
  if (!problem.empty()) {
    if (err != nullptr) *err = "oracle_w4a8_grouped_gemm_cpu: " + problem;
    return false;
  }
  const size_t T = p.T, N = p.N, K = p.K;
  if (T == 0 || N == 0) return true;
  if (y == nullptr) {
    if (err != nullptr) *err = "oracle_w4a8_grouped_gemm_cpu: y is null";
    return false;
  }
  threads = ResolveThreads(threads);
  const int* offsets = p.group_offsets;

  float e2m1[16];
  for (int i = 0; i < 16; ++i) e2m1[i] = e2m1_decode(static_cast<uint8_t>(i));
  float e4m3[256];
  for (int i = 0; i < 256; ++i) e4m3[i] = e4m3_decode(static_cast<uint8_t>(i));

  std::vector<int> experts;  // the non-empty ones, in order
  for (int g = 0; g < p.G; ++g) {
    if (offsets[g + 1] > offsets[g]) experts.push_back(g);
  }
  // A: all T rows, then kMr zero rows, so that a part starting anywhere can read
  // PaddedRows(its rows) rows.
  std::vector<float> a((T + kMr) * K, 0.0f);
  // B: the panels of each non-empty expert, one after another.
  const size_t panel_floats = PanelFloats(N, K);
  std::vector<float> bp(experts.size() * panel_floats, 0.0f);
  ParallelFor(threads, T + experts.size() * N, [&](size_t row) {
    if (row < T) {
      const uint8_t* src = p.x + row * K;
      float* dst = a.data() + row * K;
      for (size_t k = 0; k < K; ++k) dst[k] = e4m3[src[k]];
      return;
    }
    const size_t e = (row - T) / N, n = (row - T) % N;
    const size_t wrow = static_cast<size_t>(experts[e]) * N + n;  // row of w as [G * N][K]
    const uint8_t* packed = p.w + wrow * (K / 2);
    const uint8_t* scales = p.w_scales + wrow * (K / 16);
    float* dst = bp.data() + e * panel_floats + PanelIndex(n, 0, K);
    for (size_t k = 0; k < K; k += 2) {
      const float s = e4m3[scales[k / 16]];
      const uint8_t byte = packed[k / 2];
      dst[k * kNr] = e2m1[byte & 0xF] * s;  // exact, see the header
      dst[(k + 1) * kNr] = e2m1[byte >> 4] * s;
    }
  });

  std::vector<GemmPart> parts;
  for (size_t e = 0; e < experts.size(); ++e) {
    const int g = experts[e];
    parts.push_back(GemmPart{a.data() + static_cast<size_t>(offsets[g]) * K,
                             static_cast<size_t>(offsets[g + 1] - offsets[g]),
                             bp.data() + e * panel_floats});
  }
  GroupedGemm(parts, N, K, threads, [&](size_t part, size_t i, size_t n, float s) {
    const int g = experts[part];
    const size_t t = static_cast<size_t>(offsets[g]) + i;
    y[t * N + n] = p.x_scales[t] * (p.w_global[g] * s);
  });
  return true;
}

}  // namespace fp4arena
