#include "reference/cpu_gemm.h"

#include <cstring>

namespace fp4arena {
namespace cpu_gemm {
namespace {

// Eight lanes over n: lane j of a vector only ever meets lane j, so vector arithmetic is
// eight independent scalar dot products, not a reassociated sum.
typedef float V8 __attribute__((vector_size(32)));

// acc[i][j] (row stride ldacc) += sum over k < kc, in increasing k, of a[i][k] * bp[k][j].
// a has row stride lda; bp is a k-major panel of 16 columns. Cloned for AVX2 where the CPU
// has it: same arithmetic, wider registers.
#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("avx2", "default")))
#endif
void MicroKernel(const float* a, size_t lda, const float* bp, int kc, float* acc, int ldacc) {
  V8 c[kMr][2];
#pragma GCC unroll 4
  for (int i = 0; i < kMr; ++i) {
    std::memcpy(&c[i][0], acc + i * ldacc, sizeof(V8));
    std::memcpy(&c[i][1], acc + i * ldacc + 8, sizeof(V8));
  }
  for (int k = 0; k < kc; ++k) {
    V8 b0, b1;
    std::memcpy(&b0, bp + k * kNr, sizeof(V8));
    std::memcpy(&b1, bp + k * kNr + 8, sizeof(V8));
#pragma GCC unroll 4
    for (int i = 0; i < kMr; ++i) {
      const float av = a[i * lda + k];
      c[i][0] += av * b0;
      c[i][1] += av * b1;
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < kMr; ++i) {
    std::memcpy(acc + i * ldacc, &c[i][0], sizeof(V8));
    std::memcpy(acc + i * ldacc + 8, &c[i][1], sizeof(V8));
  }
}

}  // namespace

void TileDotProducts(const float* a, size_t rows, const float* panels, size_t first_panel,
                     size_t panel_count, size_t K, float* acc) {
  std::fill(acc, acc + static_cast<size_t>(kTm) * kTn, 0.0f);
  const size_t micro_tiles = PaddedRows(rows) / kMr;
  for (size_t k0 = 0; k0 < K; k0 += kKc) {
    const int kc = static_cast<int>(std::min<size_t>(kKc, K - k0));
    for (size_t pi = 0; pi < panel_count; ++pi) {
      const float* panel = panels + (first_panel + pi) * K * kNr + k0 * kNr;
      for (size_t mt = 0; mt < micro_tiles; ++mt) {
        MicroKernel(a + mt * kMr * K + k0, K, panel, kc, acc + mt * kMr * kTn + pi * kNr, kTn);
      }
    }
  }
}

}  // namespace cpu_gemm
}  // namespace fp4arena
