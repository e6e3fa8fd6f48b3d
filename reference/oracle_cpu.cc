// CPU oracle. Every output is computed as
//   float s = 0; for k = 0..K-1: s += a[m][k] * b[n][k];  c = alpha * s;
// exactly, whatever the thread count or tiling: the blocking below only changes which outputs
// are computed together, never the order of one output's sum. Products of two dequantized
// NVFP4 elements are exact in FP32 (at most 5 significant bits each, magnitudes within
// [2^-20, 2^23]), so a fused multiply-add, if the compiler contracts to one, gives the same
// bits as a multiply then an add.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <thread>
#include <vector>

#include "reference/fp4_codecs.h"
#include "reference/oracle.h"

namespace fp4arena {
namespace {

constexpr int kMr = 4;    // output rows per micro tile
constexpr int kNr = 16;   // output columns per micro tile (one B panel)
constexpr int kTm = 64;   // rows of one thread work item
constexpr int kTn = 256;  // columns of one thread work item
constexpr int kKc = 512;  // k-block length: keeps the A and B slices of a work item in L2

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

// Runs body(item) for item in [0, items) on up to `threads` threads (the caller included).
template <typename Body>
void ParallelFor(int threads, size_t items, const Body& body) {
  const int n = static_cast<int>(std::min<size_t>(std::max(threads, 1), items));
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t item; (item = next.fetch_add(1)) < items;) body(item);
  };
  std::vector<std::thread> pool;
  pool.reserve(n > 0 ? n - 1 : 0);
  for (int t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
}

size_t RoundUp(size_t x, size_t m) {
  return (x + m - 1) / m * m;
}

}  // namespace

void oracle_fp32_cpu(const Nvfp4MatmulProblem& p, float* c, int threads) {
  if (p.M <= 0 || p.N <= 0) return;
  const size_t M = p.M, N = p.N;
  if (p.K <= 0) {
    std::fill(c, c + M * N, 0.0f);
    return;
  }
  const size_t K = p.K;
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  if (threads <= 0) threads = 1;

  float e2m1[16];
  for (int i = 0; i < 16; ++i) e2m1[i] = e2m1_decode(static_cast<uint8_t>(i));
  float e4m3[256];
  for (int i = 0; i < 256; ++i) e4m3[i] = e4m3_decode(static_cast<uint8_t>(i));
  const size_t bytes_per_row = K / 2, scales_per_row = K / 16;

  // A: row-major, padded with zero rows to a whole number of micro tiles.
  const size_t m_pad = RoundUp(M, kMr);
  std::vector<float> a(m_pad * K, 0.0f);
  // B: k-major panels of kNr columns, bp[panel][k][j] = b[panel * kNr + j][k], zero padded.
  const size_t panels = RoundUp(N, kNr) / kNr;
  std::vector<float> bp(panels * K * kNr, 0.0f);

  ParallelFor(threads, M + N, [&](size_t row) {
    const bool is_a = row < M;
    const size_t r = is_a ? row : row - M;
    const uint8_t* packed = (is_a ? p.a : p.b) + r * bytes_per_row;
    const uint8_t* scales = (is_a ? p.a_scales : p.b_scales) + r * scales_per_row;
    float* out = is_a ? a.data() + r * K : bp.data() + (r / kNr) * K * kNr + r % kNr;
    const size_t stride = is_a ? 1 : kNr;
    for (size_t k = 0; k < K; k += 2) {
      const float s = e4m3[scales[k / 16]];
      const uint8_t byte = packed[k / 2];
      out[k * stride] = e2m1[byte & 0xF] * s;
      out[(k + 1) * stride] = e2m1[byte >> 4] * s;
    }
  });

  const size_t tiles_m = RoundUp(M, kTm) / kTm;
  const size_t tiles_n = RoundUp(N, kTn) / kTn;
  const float alpha = p.alpha;
  ParallelFor(threads, tiles_m * tiles_n, [&](size_t tile) {
    const size_t m0 = (tile / tiles_n) * kTm;
    const size_t n0 = (tile % tiles_n) * kTn;
    const size_t m_tiles = (std::min(m0 + kTm, m_pad) - m0) / kMr;
    const size_t p0 = n0 / kNr;
    const size_t p_count = std::min(p0 + kTn / kNr, panels) - p0;
    std::vector<float> acc(static_cast<size_t>(kTm) * kTn, 0.0f);
    for (size_t k0 = 0; k0 < K; k0 += kKc) {
      const int kc = static_cast<int>(std::min<size_t>(kKc, K - k0));
      for (size_t pi = 0; pi < p_count; ++pi) {
        const float* panel = bp.data() + (p0 + pi) * K * kNr + k0 * kNr;
        for (size_t mt = 0; mt < m_tiles; ++mt) {
          MicroKernel(a.data() + (m0 + mt * kMr) * K + k0, K, panel, kc,
                      acc.data() + mt * kMr * kTn + pi * kNr, kTn);
        }
      }
    }
    const size_t m_end = std::min(m0 + kTm, M), n_end = std::min(n0 + kTn, N);
    for (size_t m = m0; m < m_end; ++m) {
      const float* src = acc.data() + (m - m0) * kTn;
      float* dst = c + m * N;
      for (size_t n = n0; n < n_end; ++n) dst[n] = alpha * src[n - n0];
    }
  });
}

}  // namespace fp4arena
