// The blocked FP32 GEMM shared by the CPU oracles (internal to reference/). Operands are
// already dequantized to FP32; every output is the plain FP32 dot product
//   float s = 0; for k = 0..K-1: s += a[m][k] * b[n][k];
// in increasing k, accumulated in one float, whatever the thread count or tiling: blocking
// only changes which outputs are computed together, never the order of one output's sum.
// The oracles feed it operands whose products are exact in FP32, so a fused multiply-add,
// if the compiler contracts to one, gives the same bits as a multiply then an add.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "reference/parallel.h"

namespace fp4arena {
namespace cpu_gemm {

inline constexpr int kMr = 4;    ///< output rows per micro tile
inline constexpr int kNr = 16;   ///< output columns per micro tile (one B panel)
inline constexpr int kTm = 64;   ///< rows of one thread work item
inline constexpr int kTn = 256;  ///< columns of one thread work item
inline constexpr int kKc = 512;  ///< k-block length: keeps a work item's slices in L2

inline size_t RoundUp(size_t x, size_t m) {
  return (x + m - 1) / m * m;
}

/// The A operand of a GEMM with K columns: row-major, rows padded with zeros to a multiple
/// of kMr (a micro tile always reads kMr whole rows).
inline size_t PaddedRows(size_t rows) {
  return RoundUp(rows, kMr);
}

/// The B operand ([N][K] logically) is held as k-major panels of kNr columns:
/// panels[PanelIndex(n, k, K)] = b[n][k], padded with zero columns to a whole panel.
inline size_t PanelFloats(size_t N, size_t K) {
  return RoundUp(N, kNr) * K;
}
inline size_t PanelIndex(size_t n, size_t k, size_t K) {
  return (n / kNr) * K * kNr + k * kNr + n % kNr;
}

/// One GEMM of a (possibly grouped) batch: `rows` rows of A starting at `a` (row stride K,
/// with PaddedRows(rows) rows readable: the rows past `rows` may belong to anything, their
/// sums are computed and dropped) times the panels of one B.
struct GemmPart {
  const float* a = nullptr;
  size_t rows = 0;
  const float* panels = nullptr;
};

/// Sums of one work item: for i < PaddedRows(rows) (rows <= kTm) and j < panel_count * kNr
/// (panel_count <= kTn / kNr), acc[i * kTn + j] = the FP32 dot product over k of row i of
/// `a` and column first_panel * kNr + j of `panels`, in increasing k. acc holds kTm * kTn.
void TileDotProducts(const float* a, size_t rows, const float* panels, size_t first_panel,
                     size_t panel_count, size_t K, float* acc);

/// For every part p, row i < parts[p].rows and column n < N, calls store(p, i, n, s) with s
/// the FP32 dot product of A row i and B column n over k in increasing order. Work items of
/// kTm x kTn outputs run on `threads` threads (0: hardware concurrency); store is called
/// concurrently, at most once per output, from the thread that computed it.
template <typename Store>
void GroupedGemm(const std::vector<GemmPart>& parts, size_t N, size_t K, int threads,
                 const Store& store) {
  const size_t tiles_n = RoundUp(N, kTn) / kTn;
  const size_t panels = RoundUp(N, kNr) / kNr;
  // first_item[p]: index of part p's first work item; items of a part are row-tile major.
  std::vector<size_t> first_item(parts.size() + 1, 0);
  for (size_t p = 0; p < parts.size(); ++p) {
    first_item[p + 1] = first_item[p] + RoundUp(parts[p].rows, kTm) / kTm * tiles_n;
  }
  ParallelFor(ResolveThreads(threads), first_item.back(), [&](size_t item) {
    const size_t p =
        std::upper_bound(first_item.begin(), first_item.end(), item) - first_item.begin() - 1;
    const GemmPart& part = parts[p];
    const size_t tile = item - first_item[p];
    const size_t m0 = (tile / tiles_n) * kTm;
    const size_t n0 = (tile % tiles_n) * kTn;
    const size_t m_end = std::min(m0 + kTm, part.rows), n_end = std::min(n0 + kTn, N);
    const size_t p0 = n0 / kNr;
    const size_t p_count = std::min(p0 + kTn / kNr, panels) - p0;
    std::vector<float> acc(static_cast<size_t>(kTm) * kTn);
    TileDotProducts(part.a + m0 * K, m_end - m0, part.panels, p0, p_count, K, acc.data());
    for (size_t m = m0; m < m_end; ++m) {
      const float* src = acc.data() + (m - m0) * kTn;
      for (size_t n = n0; n < n_end; ++n) store(p, m, n, src[n - n0]);
    }
  });
}

}  // namespace cpu_gemm
}  // namespace fp4arena
