// w4a16_matmul rung "wgmma_permuted": rung wgmma_wide_decode.cu with the large-M kernel
// replaced by the nvfp4_matmul ladder's fastest main kernel (solutions/nvfp4_matmul/
// wgmma_tiles.cu), fed by a prologue that permutes x into that kernel's K order.
//
//   y (M, N) half = x @ deq(w)^T
//   x (M, K) fp16 row-major; w (N, K/2) packed e2m1, element 2j in the LOW nibble of byte j;
//   w_scales (N, K/group_size) fp16; deq(w)[n][k] = e2m1(w[n][k]) * w_scales[n][k/group_size].
//
// Changed since wgmma_wide_decode.cu (its small-M kernel and general path are kept as they
// are):
//   - A prologue copies x into x_h (M, K) FP16 with each 256-wide K chunk permuted (see "K
//     order"), so that quad lane t's weights of a chunk are 32 contiguous packed bytes and each
//     fragment register is nibbles J and J + 4 of one word: 3 ALU instructions and one FP16x2
//     multiply per register, where the natural K order needed a byte pick per lane (prmt), a
//     second shift pair and a second multiply.
//   - The main kernel is the flagship's: persistent warp-specialised wgmma (m64n256k16, or
//     m64n128k16 on the narrow tile where the wide tiles do not fill the SMs), a 4-stage TMA
//     ring of x_h, two wgmma steps in flight per consumer warpgroup, stream-K where whole
//     tiles would leave a wave badly filled, and a K tail for any K % 32 == 0 (was K % 64).
//   - Scales are FP16 per group of 32 or 128 (the flagship's were e4m3 per 16): quad lane t's
//     64 k of a chunk lie in one or two groups, loaded with the chunk one unit ahead.
// Why: the profile of wgmma_wide_decode at rev1 put the large-M kernel's gap to cuBLAS on the
//   dequantization the consumer warps issue between wgmma steps (about 9 instructions per
//   fragment register against 4 in the flagship). Permuting x costs one pass over 12.6 MB
//   (read and write) per call; the flagship's own prologue writes as much.
//   Expected: rev1 near the flagship's 0.95x; decode unchanged.
// Bound (ncu, `--action profile --case rev1`, H200, clocks not locked): the prologue runs in
//   8.6-9.0 us, the main kernel in 151-154 us at 82% tensor-pipe activity against the
//   flagship main kernel's 135.5 us at 90% at the same shape, with stalls on global loads
//   (long_scoreboard 2.9 cycles per instruction against 1.0). With every scale load and
//   multiply removed (a wrong-result experiment) the main kernel took 144.6 us; loading the two
//   group-32 scales as one 4-byte word changed nothing. See solutions/w4a16_matmul/README.md.
//
// K order: inside each 256-wide K chunk S, wgmma step s (0..15) of thread quad lane t and
//   fragment slot sigma (0..15; slot 2t+8h+b) takes real k = 256 S + 64 t + 8 (s/2) + 2 (s%2)
//   + h + 4 b. So quad lane t owns real k in [64t, 64t+64): 32 contiguous packed bytes per
//   row, and step s uses packed word s/2 of them. The prologue writes x_h in the same order,
//   so every dot product pairs the same real k.
// K tail: tail step s (0..n-1), slot 2t+b takes real k = 256 F + 16 s + 4 t + b and slot
//   8+2t+b real k = 256 F + 16 s + 4 t + 2 + b: quad lane t's four values are packed bytes
//   8 s + 2 t and 8 s + 2 t + 1 of the tail, one scale per step (w_tail, written by the
//   prologue).
// Exactness: a nibble s|e1e0m as FP16 bits s<<15 | e1e0m<<9 is value * 2^-14 exactly (e = 0
//   is the FP16 subnormal 2^-15 = 0.5 * 2^-14). If every |scale| < 4 (the prologue checks all
//   of w_scales each call; kFast), one multiply by scale * 2^14 (exact, finite) rounds
//   e2m1 * scale once to FP16; otherwise the value is first made whole (* 2^14) and then
//   scaled. Either way the fragment is fp16(e2m1 * scale), what the cuBLAS yardstick's
//   pre-dequantized weights hold; FP16 arithmetic keeps subnormal scales. Products and sums
//   are FP32 in the tensor cores.
// Small M (M <= 16, K % 128 == 0, decode): wgmma_wide_decode.cu's mma.sync kernel, unchanged
//   (blocks of 64 w rows and 12 warps, split-K inside the block, x read straight from the
//   caller's buffer).
// General path: tiny problems (at most 2^21 multiply-adds with K <= 128), misaligned x or w,
//   or a group size the fast paths do not take: one output per thread in FP32.
// Scratch: one static cache (x_h and w_tail grown as needed, x_h's TMA descriptors, the
//   stream-K slots and flags, the scale flag and the epoch counters).
// Command: scripts/run_challenge challenges/w4a16_matmul --solution
//            solutions/w4a16_matmul/wgmma_permuted.cu --action submit
//          Tuning macros for experiments (--nvcc-flag -DNAME=V): W4A16_NARROW_COST,
//          W4A16_NARROW_SPLIT_UNITS, W4A16_WGMMA_DEPTH, W4A16_USE_PDL.
#include <cuda.h>  // CUtensorMap and its enums (types only; the encoder is fetched at run time)
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "hopper.cuh"  // the ladder's shared device helpers

namespace {

using namespace w4a16_hopper;

// ----------------------------------------------------------------------------------------
// Configuration
constexpr int kTileN = 128;        // rows of w per CTA: wgmma M side, 2 consumer WGs x 64
constexpr int kTileM = 256;        // rows of x per CTA, the wide tile: wgmma N side (n256)
constexpr int kTileMNarrow = 128;  // the narrow tile (n128), for shapes with few wide tiles
constexpr int kStageK = 64;        // K per shared stage: one 128-byte swizzle row of FP16
constexpr int kStages = 4;         // x_h ring depth
constexpr int kChunkK = 256;       // K per register refill of packed w (the K-order period)
constexpr int kConsumers = 2;      // consumer warpgroups
#ifndef W4A16_NARROW_COST
#define W4A16_NARROW_COST 1.5  // a narrow wave's time over half a wide wave's (measured)
#endif
#ifndef W4A16_NARROW_SPLIT_UNITS
#define W4A16_NARROW_SPLIT_UNITS 8  // fewest K units per narrow tile for stream-K
#endif
#ifndef W4A16_WGMMA_DEPTH
#define W4A16_WGMMA_DEPTH 2  // wgmma steps left in flight per consumer warpgroup (1..3)
#endif
constexpr double kNarrowCost = W4A16_NARROW_COST;
constexpr int kMinSplitUnitsNarrow = W4A16_NARROW_SPLIT_UNITS;
constexpr int kWgmmaDepth = W4A16_WGMMA_DEPTH;
static_assert(kWgmmaDepth >= 1 && kWgmmaDepth <= 3, "steps in flight: a stage has 4");
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kStageBytes = kTileM * kStageK * 2;
constexpr int kEpiPitch = kTileN + 8;  // halves per staged y row: +16 B kills bank conflicts
constexpr int kEpiBytes = kTileM * kEpiPitch * 2;
constexpr int kBarOffset = kStages * kStageBytes + kEpiBytes;
constexpr int kStagesMax = kStages * kTileM / kTileMNarrow;         // narrow boxes in the same ring
constexpr int kSmemBytes = kBarOffset + 2 * kStagesMax * 8 + 1024;  // + slack for 1 KB align
constexpr int kProducerRegs = 40;
constexpr int kConsumerRegs = 232;
constexpr int kTailStages = kChunkK / kStageK;   // stages of one K tail (K % 256 < 256)
constexpr int kTailStepsMax = kChunkK / 16 - 1;  // k16 steps of one K tail: 0..15

static_assert(kTileN == 64 * kConsumers, "each consumer warpgroup owns 64 w rows (wgmma m64)");
static_assert(kStageK * 2 == 128, "a stage row must be exactly one 128-byte swizzle span");
static_assert(kChunkK == 4 * kStageK, "one w register chunk spans 4 stages (the K order)");
static_assert(kStageBytes % 1024 == 0, "128B-swizzled stages must stay 1024-byte aligned");
static_assert(kTileM <= 256, "TMA box dimension and wgmma N are at most 256");
static_assert(kTileMNarrow < kTileM && kTileMNarrow % 8 == 0,
              "a narrow box is whole 1024-byte swizzle atoms (8 rows) inside a wide stage");
static_assert((kEpiPitch * 2) % 16 == 0, "staged y rows must stay 16-byte aligned");
static_assert(kSmemBytes <= 227 * 1024, "shared memory per block on sm_90 is 227 KB");
static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumers <= 65536,
              "setmaxnreg budgets must fit the 64K-register file");
static_assert(kTailStages * 4 == kTailStepsMax + 1, "a tail stage holds 4 k16 steps");
static_assert(kProducerRegs % 8 == 0 && kConsumerRegs % 8 == 0, "setmaxnreg takes multiples of 8");

// Configuration (small-M kernel)
constexpr int kDecWarps = 12;       // warps per block, each a K slice of the same rows
constexpr int kDecTiles = 8;        // n8 tiles of w per block (64 rows)
constexpr int kDecSegK = 128;       // K per segment: one 16-byte load per lane and row
constexpr int kDecSegsPerWarp = 2;  // segments a warp loads before any math
static_assert(kDecSegK == 4 * 32, "a lane's 32 k of a segment must be one group of 32");
static_assert(kDecWarps * kDecTiles * 4 * 32 * 4 <= 48 * 1024,
              "the split-K reduction buffer must fit 48 KB of static shared memory");

// ----------------------------------------------------------------------------------------
// PTX primitives of this rung alone (the shared ones are in hopper.cuh)

// PTX ISA "bar.sync" with a named barrier (id 1) over the consumer threads only.
__device__ __forceinline__ void consumer_barrier() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(128 * kConsumers) : "memory");
}

// ----------------------------------------------------------------------------------------
// Dequantization helpers

constexpr uint32_t kTwo14x2 = 0x74007400u;  // FP16x2 of 2^14 in both halves

// The fragment register of nibbles J, J + 4 of `w` with FP16x2 scale `s2`. kFast: `s2` is
// scale * 2^14 (every |scale| < 4, so that is exact and finite) and one multiply rounds
// e2m1 * scale once; otherwise `s2` is the scale and the value is first made whole (* 2^14,
// exact), then scaled (one rounding). Either way the result is fp16(e2m1 * scale), the value
// the cuBLAS yardstick's pre-dequantized weights hold.
template <bool kFast, int J>
__device__ __forceinline__ uint32_t dequant_pair(uint32_t w, uint32_t s2) {
  const uint32_t v = e2m1x2_to_f16x2_pow2m14<J>(w);
  return kFast ? hmul2(v, s2) : hmul2(hmul2(v, kTwo14x2), s2);
}
// Byte `sel`-chosen of `word` -> FP16x2 (low nibble's value in the low half, high nibble's in
// the high half), each times 2^-14 (exact). `sel` = byte | (byte + 4) << 8 for prmt: result
// byte 0 = the byte (low nibble in bits 0-3), result byte 2 = the byte of word >> 4 (high
// nibble in bits 16-19); bytes 1 and 3 are masked off. (Small-M kernel.)
__device__ __forceinline__ uint32_t e2m1x2_pow2m14(uint32_t word, uint32_t sel) {
  const uint32_t u = __byte_perm(word, word >> 4, sel);
  return ((u << 9) & 0x0E000E00u) | ((u << 12) & 0x80008000u);
}
// ... times the FP16x2 scale `s2`: deq = fp16(e2m1 * scale).
__device__ __forceinline__ uint32_t dequant2(uint32_t word, uint32_t sel, uint32_t s2) {
  return hmul2(hmul2(e2m1x2_pow2m14(word, sel), kTwo14x2), s2);
}
// ----------------------------------------------------------------------------------------
// Prologue ("prep"): one grid, four kinds of blocks (F = K / 256 full chunks per row, n =
// K % 256 / 16 tail steps, G = group_size).
//   1. x's full 256-wide K chunks -> x_h (M, K) FP16, the same values permuted per chunk (see
//      "K order"). x_h piece p = 4 u + J (J = 0..3, u = 0..7) of chunk S of row m has, as its
//      word t (t = 0..3), elements J and J + 4 of the source piece x[m][256 S + 64 t + 8 u,
//      + 8) (one prmt per word).
//   2. x's K tail (n steps) -> x_h columns [256 F, K) in the tail order: one thread per
//      (row, step).
//   3. w's K tail -> w_tail, the tail's quad-lane words (see "K tail"): one thread per
//      (row, tail stage).
//   4. The scale check: each thread reads 8 scales of w_scales; a warp that sees one with
//      |scale| >= 4 (or not finite) writes this call's epoch to *big_flag. The main kernel then
//      takes the two-multiply dequantization (kFast = false) everywhere.
constexpr int kPrologueThreads = 256;
constexpr int kScalesPerThread = 8;

struct PrepGrid {
  int chunk_blocks;   // blocks of kind 1 (kPrologueThreads (chunk pair, piece) items each)
  int x_tail_blocks;  // blocks of kind 2 (kPrologueThreads (row, step) items each)
  int w_tail_blocks;  // blocks of kind 3 (kPrologueThreads (row, stage) items each)
  int scale_blocks;   // blocks of kind 4 (kPrologueThreads * kScalesPerThread scales each)
};

__global__ void __launch_bounds__(kPrologueThreads)
    w4a16_prep_kernel(const __half* __restrict__ x, const uint8_t* __restrict__ w,
                      const __half* __restrict__ w_scales, __half* __restrict__ x_h,
                      uint4* __restrict__ w_tail, uint32_t* __restrict__ big_flag, uint32_t epoch,
                      int M, int N, int K, int group, PrepGrid pg) {
  // Every CTA of this grid is resident once all have passed this point: the main kernel
  // (launched with programmatic stream serialization) may then start its CTAs as SMs free up;
  // it waits for this grid's completion before reading x_h, w_tail or *big_flag.
  griddep_launch_dependents();
  const int tid = threadIdx.x;
  const int F = K / kChunkK, n = (K % kChunkK) / 16;
  const size_t row_bytes = static_cast<size_t>(K) / 2, row_groups = K / group;
  int block = blockIdx.x;

  if (block < pg.chunk_blocks) {
    // ---- kind 1: full chunks of x (rows and pieces 16-byte aligned: K % 32 == 0). Thread
    // (pair, p) writes piece p of chunks 2 pair and 2 pair + 1, so that a warp's store covers
    // 512 contiguous bytes; the four lanes p = 4 u + J (J = 0..3) load the same four source
    // pieces (one L1 request per instruction), all eight loads issued before any store.
    const int item = block * kPrologueThreads + tid;  // M * F <= 2^22 chunks: int is enough
    const int chunks = M * F;
    const int c0 = 2 * (item / 32);
    if (c0 >= chunks) return;
    const int p = item % 32, u = p / 4, J = p % 4;
    const int nc = c0 + 1 < chunks ? 2 : 1;
    int row[2], col[2];  // chunk c0 + i: row m, first column 256 S
    uint4 v[2][4];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int m = (c0 + i) / F;
      row[i] = m;
      col[i] = (c0 + i - m * F) * kChunkK;
      if (i < nc) {
        const __half* src = x + static_cast<size_t>(m) * K + col[i] + 8 * u;
#pragma unroll
        for (int t = 0; t < 4; ++t) v[i][t] = ldg_nc_v4(src + 64 * t);
      }
    }
    // Element J of a piece is half (J % 2) of word J / 2; element J + 4 the same half of word
    // J / 2 + 2.
    const uint32_t sel = (J & 1) ? 0x7632u : 0x5410u;
    const bool odd_word = J >= 2;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      if (i < nc) {
        uint32_t wd[4];
#pragma unroll
        for (int t = 0; t < 4; ++t)
          wd[t] =
              __byte_perm(odd_word ? v[i][t].y : v[i][t].x, odd_word ? v[i][t].w : v[i][t].z, sel);
        reinterpret_cast<uint4*>(x_h + static_cast<size_t>(row[i]) * K + col[i])[p] =
            make_uint4(wd[0], wd[1], wd[2], wd[3]);
      }
    }
    return;
  }
  block -= pg.chunk_blocks;
  if (block < pg.x_tail_blocks) {
    // ---- kind 2: x's K tail, step s of row m: real k = 256 F + 16 s + [0, 16) (32 bytes,
    // 16-byte aligned). Tail order (see "K tail"): x_h column 16 s + j holds real k 16 s + 4 (j
    // / 2) + (j % 2) for j < 8 and 16 s + 4 ((j - 8) / 2) + 2 + (j % 2) for j >= 8: the even
    // words of the 16 halves fill columns 0..7, the odd words 8..15.
    const int item = block * kPrologueThreads + tid;
    if (item >= M * n) return;
    const int m = item / n, s = item - (item / n) * n;
    const size_t off = static_cast<size_t>(m) * K + F * kChunkK + 16 * s;
    const uint4 lo = ldg_nc_v4(x + off), hi = ldg_nc_v4(x + off + 8);
    uint4* dst = reinterpret_cast<uint4*>(x_h + off);
    dst[0] = make_uint4(lo.x, lo.z, hi.x, hi.z);
    dst[1] = make_uint4(lo.y, lo.w, hi.y, hi.w);
    return;
  }
  block -= pg.x_tail_blocks;
  if (block < pg.w_tail_blocks) {
    // ---- kind 3: w's K tail, stage q of row r: for each of its steps s = 4 q + s4 < n, quad
    // lane t's word s4 holds packed bytes e = 8 s + 2 t and o = e + 1 of the tail and the
    // step's FP16 scale: bits 0-3 e low nibble, 4-7 o low, 8-15 scale low byte, 16-19 e high,
    // 20-23 o high, 24-31 scale high byte, so that the nibble trick with J = 0 gives slots
    // (2t, 2t+1) and J = 1 slots (2t+8, 2t+9) of the tail order, and prmt 0x3131 the scale.
    // Words of steps >= n are zero.
    const int nst = (n + 3) / 4;
    const int item = block * kPrologueThreads + tid;
    if (item >= N * nst) return;
    const int r = item / nst, q = item - (item / nst) * nst;
    uint32_t wd[4][4];  // [t][s4]
#pragma unroll
    for (int s4 = 0; s4 < 4; ++s4) {
      const int s = 4 * q + s4;
      uint2 v = make_uint2(0, 0);  // bytes 8 s .. 8 s + 7 (8-byte aligned)
      uint32_t scale = 0;
      if (s < n) {
        v = ldg_nc_v2(w + r * row_bytes + F * 128 + 8 * s);
        scale = ldg_nc_u16(w_scales + r * row_groups + (F * kChunkK + 16 * s) / group);
      }
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const uint32_t pair = ((t < 2 ? v.x : v.y) >> (16 * (t % 2))) & 0xFFFF;
        const uint32_t e = pair & 0xFF, o = pair >> 8;
        wd[t][s4] = (e & 0xF) | ((o & 0xF) << 4) | ((scale & 0xFF) << 8) | ((e >> 4) << 16) |
                    ((o >> 4) << 20) | ((scale >> 8) << 24);
      }
    }
#pragma unroll
    for (int t = 0; t < 4; ++t)
      w_tail[(static_cast<size_t>(r) * kTailStages + q) * 4 + t] =
          make_uint4(wd[t][0], wd[t][1], wd[t][2], wd[t][3]);
    return;
  }
  block -= pg.w_tail_blocks;
  {
    // ---- kind 4: the scale check.
    const long long total = static_cast<long long>(N) * row_groups;
    const long long first =
        (static_cast<long long>(block) * kPrologueThreads + tid) * kScalesPerThread;
    const bool aligned16 = (reinterpret_cast<uintptr_t>(w_scales) & 15) == 0;
    bool big = false;
    if (first + kScalesPerThread <= total && aligned16) {
      const uint4 v = ldg_nc_v4(w_scales + first);
      const uint32_t wd[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
        big |= (wd[i] & 0x7FFFu) >= 0x4400u || ((wd[i] >> 16) & 0x7FFFu) >= 0x4400u;
    } else {
      for (int i = 0; i < kScalesPerThread && first + i < total; ++i)
        big |= (ldg_nc_u16(w_scales + first + i) & 0x7FFFu) >= 0x4400u;
    }
    if (__any_sync(0xFFFFFFFFu, big) && (tid & 31) == 0) *big_flag = epoch;
  }
}

// ----------------------------------------------------------------------------------------
// Main kernel, persistent: gridDim.x CTAs (at most one per SM) walk the tiles
// blockIdx.x, blockIdx.x + gridDim.x, ... (or the stream-K schedule below); tile id = n_tile *
// tiles_m + m_tile (x tiles fastest, so the tiles in flight together share w rows in L2).
// Warpgroup 0 = producer (one thread issues TMA, running ahead into the next tile),
// warpgroups 1..2 = consumers. Any K % 32 == 0: F = K / 256 full chunks, then n = K % 256 / 16
// tail steps in ceil(n / 4) stages. Needs w 16-byte aligned (its rows are K / 2 bytes, a
// multiple of 16).
struct WChunk {  // one quad lane's packed w of one 256-wide chunk, rows g and g + 8
  uint4 c0[2], c1[2];
  // The FP16 scales (zero-extended) of its k [64t, 64t+32) and [64t+32, 64t+64), kept as
  // loaded: combining them here would wait for the loads at prefetch time.
  uint32_t s0[2], s1[2];
};
// Quad lane t of a chunk: packed bytes [32 t, 32 t + 32) of the chunk's 128 in each row, and
// the scales of groups (256 S + 64 t) / G and (256 S + 64 t + 32) / G (one group for G = 128).
template <int kGroup>
__device__ __forceinline__ void load_chunk(WChunk& x, const uint8_t* p0, const uint8_t* p1,
                                           const __half* q0, const __half* q1) {
  x.c0[0] = ldg_nc_v4(p0);
  x.c0[1] = ldg_nc_v4(p0 + 16);
  x.c1[0] = ldg_nc_v4(p1);
  x.c1[1] = ldg_nc_v4(p1 + 16);
  x.s0[0] = ldg_nc_u16(q0);
  x.s1[0] = ldg_nc_u16(q1);
  if (kGroup == 32) {
    x.s0[1] = ldg_nc_u16(q0 + 1);
    x.s1[1] = ldg_nc_u16(q1 + 1);
  }
}

// Stream-K schedule. A tile's K is "units" long (F full chunks, then the tail in units of
// two tail stages). Tiles [0, sk_tiles) are split along K: their sk_tiles * units units are
// cut into gridDim.x contiguous ranges, CTA c taking units [c W / G, (c + 1) W / G) (W =
// sk_tiles * units, G = gridDim.x); then tiles sk_tiles + c + j G whole (data-parallel). A
// range covers a piece (a "segment") of one or more tiles; the CTA whose segment starts at
// unit 0 of a tile owns it: it adds the partial sums of the CTAs that cover the rest of the
// tile (always later CTAs, which compute that piece first in their range and never wait) and
// stores y. The others store their FP32 partial sums in their CTA's workspace slot and
// publish the call's epoch in their flag.
struct StreamK {
  int sk_tiles;      // tiles split along K
  int units;         // units per tile
  int W;             // sk_tiles * units
  float4* partials;  // (gridDim.x, 32, 256) float4: one slot per CTA
  uint32_t* flags;   // (gridDim.x): epoch of the slot's last write
  uint32_t epoch;    // this call's epoch (never 0)
};
struct Segment {
  int tile, ub, ue;  // units [ub, ue) of tile
};
__device__ __forceinline__ int sk_begin(const StreamK& sk, int cta) {
  return static_cast<int>(static_cast<long long>(cta) * sk.W / gridDim.x);
}
__device__ __forceinline__ Segment first_segment(const StreamK& sk) {
  const int b = sk_begin(sk, blockIdx.x), e = sk_begin(sk, blockIdx.x + 1);
  if (b < e) {
    const int tile = b / sk.units, ub = b - tile * sk.units;
    return {tile, ub, min(sk.units, ub + e - b)};
  }
  return {sk.sk_tiles + static_cast<int>(blockIdx.x), 0, sk.units};
}
__device__ __forceinline__ Segment next_segment(const StreamK& sk, const Segment& s) {
  if (s.tile < sk.sk_tiles) {
    const int e = sk_begin(sk, blockIdx.x + 1), pos = s.tile * sk.units + s.ue;
    if (pos < e) return {s.tile + 1, 0, min(sk.units, e - pos)};
    return {sk.sk_tiles + static_cast<int>(blockIdx.x), 0, sk.units};
  }
  return {s.tile + static_cast<int>(gridDim.x), 0, sk.units};
}
// The CTA whose range holds stream-K unit x.
__device__ __forceinline__ int sk_cta_of(const StreamK& sk, int x) {
  return static_cast<int>(((static_cast<long long>(x) + 1) * gridDim.x - 1) / sk.W);
}
template <int kTM, int kGroup>
__global__ void __launch_bounds__(kThreads, 1)
    w4a16_wgmma_persistent_kernel(const __grid_constant__ CUtensorMap tmap_x_h,
                                  const uint8_t* __restrict__ w,
                                  const __half* __restrict__ w_scales,
                                  const uint4* __restrict__ w_tail, __half* __restrict__ y, int M,
                                  int N, int K, bool y_vec_ok, StreamK sk,
                                  const uint32_t* __restrict__ big_flag, uint32_t epoch) {
  static_assert(kTM == kTileM || kTM == kTileMNarrow, "x rows per tile: wide or narrow");
  static_assert(kGroup == 32 || kGroup == 128, "group_size is 32 or 128");
  // The ring: kNS stages of one x_h box each (4 wide, 8 narrow) in the same bytes, so the
  // narrow tile's producer runs as far ahead in time as the wide one's.
  constexpr int kTileBytes = kTM * kStageK * 2;
  constexpr int kNS = kStages * (kTileM / kTM);
  static_assert(kNS <= kStagesMax, "the barrier area holds kStagesMax stages");
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t base = (raw_base + 1023u) & ~1023u;
  const uint32_t epi = base + kStages * kStageBytes;  // after the ring (the same bytes for both)
  const uint32_t full_bar = base + kBarOffset;
  const uint32_t empty_bar = full_bar + kNS * 8;
  const int wg = threadIdx.x / 128;
  const int tiles_m = (M + kTM - 1) / kTM;
  const int num_tiles = tiles_m * ((N + kTileN - 1) / kTileN);
  const int F = K / kChunkK;                     // full chunks
  const int tail_steps = (K % kChunkK) / 16;     // tail k16 steps
  const int tail_stages = (tail_steps + 3) / 4;  // tail stages
  // First stage of unit u (u = units: the tile's stage count).
  auto stage_of_unit = [&](int u) {
    return u <= F ? 4 * u : 4 * F + min(2 * (u - F), tail_stages);
  };

  if (threadIdx.x == 0) {
    for (int s = 0; s < kNS; ++s) {
      mbar_init(full_bar + 8 * s, 1);
      mbar_init(empty_bar + 8 * s, 4 * kConsumers);  // one arrival per consumer warp
    }
    fence_barrier_init();
  }
  __syncthreads();

  if (wg == 0) {
    // ---------------- producer
    setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0) {
      griddep_wait();  // x_h is written by the prologue grid (PDL: it may still be running)
      int it = 0;
      for (Segment sg = first_segment(sk); sg.tile < num_tiles; sg = next_segment(sk, sg)) {
        const int m0 = (sg.tile % tiles_m) * kTM;
        // The tail's last box may reach past K: TMA fills those columns with zeros (unused).
        const int ks_end = stage_of_unit(sg.ue);
        for (int ks = stage_of_unit(sg.ub); ks < ks_end; ++ks, ++it) {
          const int st = it % kNS;
          mbar_wait(empty_bar + 8 * st, ((it / kNS) & 1) ^ 1);
          mbar_arrive_expect_tx(full_bar + 8 * st, kTileBytes);
          tma_load_2d(base + st * kTileBytes, &tmap_x_h, full_bar + 8 * st, ks * kStageK, m0);
        }
      }
    }
    return;
  }

  // ---------------- consumers
  setmaxnreg_inc<kConsumerRegs>();
  const int cw = wg - 1;                  // consumer warpgroup 0..1
  const int wq = (threadIdx.x >> 5) & 3;  // warp inside the warpgroup
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int row_in_tile = cw * 64 + wq * 16 + g;
  const size_t row_bytes = static_cast<size_t>(K) / 2, row_groups = K / kGroup;
  // A tile's K is walked in units, each held in registers (WChunk) while the next one loads:
  // units 0..F-1 are the full chunks, units F.. the tail, two tail stages (8 steps) each.
  const int units = sk.units;  // F + ceil(tail_stages / 2)
  // w rows of a tile for this thread: g and g + 8 of its warp's 16 (rows past N clamped).
  auto row_of = [&](int tile) { return min((tile / tiles_m) * kTileN + row_in_tile, N - 1); };
  auto row8_of = [&](int tile) { return min((tile / tiles_m) * kTileN + row_in_tile + 8, N - 1); };
  // Quad lane t owns packed bytes [32t, 32t+32) of each chunk and the scales of their groups,
  // and 16-byte word t of each tail stage of w_tail.
  auto load_unit = [&](WChunk& x, int r0, int r1, int u) {
    if (u < F) {
      const int grp = kGroup == 32 ? 8 * u + 2 * t : 2 * u + t / 2;
      load_chunk<kGroup>(x, w + r0 * row_bytes + u * 128 + 32 * t,
                         w + r1 * row_bytes + u * 128 + 32 * t, w_scales + r0 * row_groups + grp,
                         w_scales + r1 * row_groups + grp);
    } else {
      const int q0 = 2 * (u - F);
#pragma unroll
      for (int i = 0; i < 2; ++i)
        if (q0 + i < tail_stages) {
          x.c0[i] = ldg_nc_v4(w_tail + (static_cast<size_t>(r0) * kTailStages + q0 + i) * 4 + t);
          x.c1[i] = ldg_nc_v4(w_tail + (static_cast<size_t>(r1) * kTailStages + q0 + i) * 4 + t);
        }
    }
  };

  Segment sg = first_segment(sk);
  if (sg.tile >= num_tiles) return;
  int r0 = row_of(sg.tile), r1 = row8_of(sg.tile);
  // w_tail and *big_flag are written by the prologue grid (PDL: it may still be running).
  griddep_wait();
  WChunk cur;
  load_unit(cur, r0, r1, sg.ub);
  // Every CTA takes the same branch (the flag is the prologue's verdict on all of w_scales), so
  // each warpgroup's wgmma instructions stay aligned.
  const bool fast = __ldcg(big_flag) != epoch;

  int it = 0;
  float acc[kTM / 2];
  auto consume = [&](auto fast_tag) {
    constexpr bool kFast = decltype(fast_tag)::value;
    for (Segment nx; sg.tile < num_tiles; sg = nx) {
      nx = next_segment(sk, sg);
      const int m0 = (sg.tile % tiles_m) * kTM, n0 = (sg.tile / tiles_m) * kTileN;
      const bool has_next = nx.tile < num_tiles;
      const int next_tile = has_next ? nx.tile : sg.tile, next_ub = has_next ? nx.ub : sg.ub;
#pragma unroll
      for (int i = 0; i < kTM / 2; ++i) acc[i] = 0.f;

      for (int u = sg.ub; u < sg.ue; ++u) {
        // Prefetch the next unit (of this segment, or the first of the next segment).
        WChunk nxt;
        if (u + 1 < sg.ue)
          load_unit(nxt, r0, r1, u + 1);
        else
          load_unit(nxt, row_of(next_tile), row8_of(next_tile), next_ub);
        if (u < F) {
          // ---- full chunk: 16 steps in the K order.
#pragma unroll
          for (int q = 0; q < 4; ++q, ++it) {
            // Stages 0, 1 hold the lane's first 32 k (words 0..3), stages 2, 3 the next 32.
            const int h = kGroup == 32 ? q >> 1 : 0;
            uint32_t sc0 = broadcast_half(cur.s0[h], 0), sc1 = broadcast_half(cur.s1[h], 0);
            if (kFast) {  // scale * 2^14, exact (see dequant_pair)
              sc0 = hmul2(sc0, kTwo14x2);
              sc1 = hmul2(sc1, kTwo14x2);
            }
            const int st = it % kNS;
            mbar_wait(full_bar + 8 * st, (it / kNS) & 1);
            const uint64_t desc = sw128_kmajor_desc(base + st * kTileBytes);
#pragma unroll
            for (int s4 = 0; s4 < 4; ++s4) {
              const int s = q * 4 + s4;
              const uint32_t w0 = word_of(cur.c0, s >> 1), w1 = word_of(cur.c1, s >> 1);
              uint32_t f[4];
              if (s & 1) {
                f[0] = dequant_pair<kFast, 2>(w0, sc0);  // row g,   slots 2t, 2t+1
                f[1] = dequant_pair<kFast, 2>(w1, sc1);  // row g+8, slots 2t, 2t+1
                f[2] = dequant_pair<kFast, 3>(w0, sc0);  // row g,   slots 2t+8, 2t+9
                f[3] = dequant_pair<kFast, 3>(w1, sc1);  // row g+8, slots 2t+8, 2t+9
              } else {
                f[0] = dequant_pair<kFast, 0>(w0, sc0);
                f[1] = dequant_pair<kFast, 0>(w1, sc1);
                f[2] = dequant_pair<kFast, 1>(w0, sc0);
                f[3] = dequant_pair<kFast, 1>(w1, sc1);
              }
              wgmma_fence(f);
              // Step s4 of the stage: K columns [16 s4, 16 s4 + 16) = +32 B in the swizzle row.
              wgmma_rs(acc, f, desc + 2 * s4);
              wgmma_commit();
              // All but the last kWgmmaDepth steps are done: once that includes the previous
              // stage's last step, the previous stage may be released (the tile's last stage is
              // released below).
              wgmma_wait<kWgmmaDepth>();
              if (s4 == kWgmmaDepth - 1 && (u > sg.ub || q > 0) && lane == 0)
                mbar_arrive(empty_bar + 8 * ((it - 1) % kNS));
            }
          }
        } else {
          // ---- tail unit: tail stages 2 (u - F) and 2 (u - F) + 1, steps 8 (u - F) + s <
          // tail_steps in the tail order; word s % 4 of a stage carries its step's codes and
          // scale (see "K tail"). A loop with run-time trip count, each wgmma waited for before
          // the next step's fragments are written: with wait_group 1 here (rolled, or unrolled
          // under conditions) ptxas serialized every wgmma of the kernel (C7513).
          const int steps = min(8, tail_steps - 8 * (u - F));
          uint64_t desc = 0;
          for (int s = 0; s < steps; ++s) {
            const int s4 = s & 3;
            if (s4 == 0) {
              const int st = it % kNS;
              mbar_wait(full_bar + 8 * st, (it / kNS) & 1);
              desc = sw128_kmajor_desc(base + st * kTileBytes);
            }
            const uint32_t w0 = word_of(s < 4 ? cur.c0[0] : cur.c0[1], s4);
            const uint32_t w1 = word_of(s < 4 ? cur.c1[0] : cur.c1[1], s4);
            uint32_t sc0 = __byte_perm(w0, 0, 0x3131), sc1 = __byte_perm(w1, 0, 0x3131);
            if (kFast) {
              sc0 = hmul2(sc0, kTwo14x2);
              sc1 = hmul2(sc1, kTwo14x2);
            }
            uint32_t f[4];
            f[0] = dequant_pair<kFast, 0>(w0, sc0);  // row g,   slots 2t, 2t+1
            f[1] = dequant_pair<kFast, 0>(w1, sc1);  // row g+8, slots 2t, 2t+1
            f[2] = dequant_pair<kFast, 1>(w0, sc0);  // row g,   slots 2t+8, 2t+9
            f[3] = dequant_pair<kFast, 1>(w1, sc1);  // row g+8, slots 2t+8, 2t+9
            wgmma_fence(f);
            wgmma_rs(acc, f, desc + 2 * s4);
            wgmma_commit();
            wgmma_wait<0>();
            if (s4 == 0 && (u > sg.ub || s > 0) && lane == 0)
              mbar_arrive(empty_bar + 8 * ((it - 1) % kNS));
            if (s4 == 3 || s + 1 == steps) ++it;  // this stage is fully issued
          }
        }
        cur = nxt;
      }
      wgmma_wait<0>();
      fence_accumulators(acc);
      // Release the tile's last stage now, so the producer fills all stages during the epilogue.
      if (lane == 0) mbar_arrive(empty_bar + 8 * ((it - 1) % kNS));
      r0 = row_of(next_tile);
      r1 = row8_of(next_tile);

      // ---------------- stream-K fix-up
      const int ct = threadIdx.x - 128;  // consumer thread 0..255
      if (sg.ub > 0) {
        // Not the tile's owner: publish the partial sums (each thread its own 128 floats; a warp
        // store covers 512 contiguous bytes) and go on.
        float4* slot = sk.partials + static_cast<size_t>(blockIdx.x) * 32 * 256;
#pragma unroll
        for (int j = 0; j < kTM / 8; ++j)
          __stcg(slot + j * 256 + ct,
                 make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]));
        __threadfence();
        consumer_barrier();
        if (ct == 0) st_release_gpu(sk.flags + blockIdx.x, sk.epoch);
        continue;
      }
      if (sg.ue < units) {
        // Owner of a split tile: add the partial sums of CTAs blockIdx.x + 1 .. last, in order.
        const int last = sk_cta_of(sk, sg.tile * units + units - 1);
        if (ct == 0)
          for (int p = blockIdx.x + 1; p <= last; ++p)
            while (ld_acquire_gpu(sk.flags + p) != sk.epoch) {
            }
        consumer_barrier();
        for (int p = blockIdx.x + 1; p <= last; ++p) {
          const float4* slot = sk.partials + static_cast<size_t>(p) * 32 * 256;
#pragma unroll
          for (int j = 0; j < kTM / 8; ++j) {
            const float4 v = __ldcg(slot + j * 256 + ct);
            acc[4 * j] += v.x;
            acc[4 * j + 1] += v.y;
            acc[4 * j + 2] += v.z;
            acc[4 * j + 3] += v.w;
          }
        }
      }

      // ---------------- epilogue: D (64 w rows x kTM x rows per warpgroup) -> y tile.
      // Warp wq holds D rows 16 wq + {g, g+8}, columns 8 j + {2t, 2t+1} in acc[4j .. 4j+3].
      // Each 8x8 block of D, stored transposed, is 8 y rows (x) x 8 contiguous halves (w).
      consumer_barrier();  // the previous tile's copy-out has finished reading the staging tile
      {
        const int mi = lane >> 3, rr = lane & 7;  // this lane addresses row rr of matrix mi
        const int nb = mi & 1;
        const uint32_t col_off = (cw * 64 + wq * 16 + nb * 8) * 2;
#pragma unroll
        for (int jp = 0; jp < kTM / 16; ++jp) {
          const int j0 = 2 * jp;
          const uint32_t r0 = pack_half2(acc[4 * j0 + 0], acc[4 * j0 + 1]);
          const uint32_t r1 = pack_half2(acc[4 * j0 + 2], acc[4 * j0 + 3]);
          const uint32_t r2 = pack_half2(acc[4 * j0 + 4], acc[4 * j0 + 5]);
          const uint32_t r3 = pack_half2(acc[4 * j0 + 6], acc[4 * j0 + 7]);
          const int jj = j0 + (mi >> 1);
          stmatrix_x4_trans(epi + (8 * jj + rr) * (kEpiPitch * 2) + col_off, r0, r1, r2, r3);
        }
      }
      consumer_barrier();
      if (y_vec_ok) {  // N % 8 == 0: 16-byte pieces, a warp store covers 2 rows x 256 B
        constexpr int kPiecesPerRow = kTileN / 8;
#pragma unroll 4
        for (int i = 0; i < kTM * kPiecesPerRow / (128 * kConsumers); ++i) {
          const int id = ct + i * 128 * kConsumers;
          const int row = id / kPiecesPerRow, pc = id % kPiecesPerRow;
          const int m = m0 + row, n = n0 + pc * 8;
          if (m >= M || n >= N) continue;
          const uint4 v = lds128(epi + row * (kEpiPitch * 2) + pc * 16);
          *reinterpret_cast<uint4*>(y + static_cast<size_t>(m) * N + n) = v;
        }
      } else {
        // Rows only 2-byte aligned: lanes take consecutive columns, so a warp store covers 64
        // contiguous bytes of one row (the 16-byte-piece order scattered every 2-byte store over
        // 8 sectors).
        const int rows = min(kTM, M - m0), cols = min(kTileN, N - n0);
        for (int i = ct; i < rows * cols; i += 128 * kConsumers) {
          const int row = i / cols, col = i - (i / cols) * cols;
          y[static_cast<size_t>(m0 + row) * N + n0 + col] =
              __ushort_as_half(lds16(epi + row * (kEpiPitch * 2) + col * 2));
        }
      }
    }
  };
  if (fast)
    consume(std::true_type());
  else
    consume(std::false_type());
}
// ----------------------------------------------------------------------------------------
// Small-M kernel (M <= 16, K % 128 == 0): block b covers w rows [32 b, 32 b + 32) (4 n8
// tiles); warp v takes segments v, v + 8, v + 16, ... (128 k each). Lane (g, t): tile j's row
// n = 32 b + 8 j + g; x rows g and g + 8 (zero past M).
template <int kGroup>
__global__ void __launch_bounds__(kDecWarps * 32, 1)
    w4a16_decode_kernel(const __half* __restrict__ x, const uint8_t* __restrict__ w,
                        const __half* __restrict__ w_scales, __half* __restrict__ y, int M, int N,
                        int K) {
  static_assert(kGroup == 32 || kGroup == 128, "group_size is 32 or 128");
  __shared__ float red[kDecWarps][kDecTiles][4][32];
  const int v = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int n0 = blockIdx.x * (kDecTiles * 8);
  const int segs = K / kDecSegK;
  const size_t row_bytes = static_cast<size_t>(K) / 2, row_groups = K / kGroup;
  const uint8_t* wrow[kDecTiles];
  const __half* srow[kDecTiles];
#pragma unroll
  for (int j = 0; j < kDecTiles; ++j) {
    const int n = min(n0 + 8 * j + g, N - 1);
    wrow[j] = w + n * row_bytes + 16 * t;
    srow[j] = w_scales + n * row_groups;
  }
  const bool has0 = g < M, has1 = g + 8 < M;
  const __half* x0 = x + static_cast<size_t>(has0 ? g : 0) * K + 32 * t;
  const __half* x1 = x + static_cast<size_t>(has1 ? g + 8 : 0) * K + 32 * t;

  float acc[kDecTiles][4];
#pragma unroll
  for (int j = 0; j < kDecTiles; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;

  for (int first = v; first < segs; first += kDecWarps * kDecSegsPerWarp) {
    // Every weight load of this batch first (up to 12 x 16 B per lane in flight).
    uint4 wv[kDecSegsPerWarp][kDecTiles];
    uint32_t sc[kDecSegsPerWarp][kDecTiles];
#pragma unroll
    for (int u = 0; u < kDecSegsPerWarp; ++u) {
      const int seg = first + u * kDecWarps;
      if (seg < segs) {
        const int grp = kGroup == 32 ? 4 * seg + t : seg;
#pragma unroll
        for (int j = 0; j < kDecTiles; ++j) {
          wv[u][j] = ldg_nc_v4(wrow[j] + seg * (kDecSegK / 2));
          sc[u][j] = ldg_nc_u16(srow[j] + grp);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kDecSegsPerWarp; ++u) {
      const int seg = first + u * kDecWarps;
      if (seg >= segs) break;
      uint32_t s2[kDecTiles];
#pragma unroll
      for (int j = 0; j < kDecTiles; ++j) s2[j] = broadcast_half(sc[u][j], 0);
        // x: 32 halves of rows g and g + 8 (16 words each), in two halves of 8 words.
#pragma unroll
      for (int hx = 0; hx < 2; ++hx) {
        const int k = seg * kDecSegK + 16 * hx;
        uint4 xa[2] = {make_uint4(0, 0, 0, 0), make_uint4(0, 0, 0, 0)};
        uint4 xb[2] = {make_uint4(0, 0, 0, 0), make_uint4(0, 0, 0, 0)};
        if (has0) {
          xa[0] = ldg_nc_v4(x0 + k);
          xa[1] = ldg_nc_v4(x0 + k + 8);
        }
        if (has1) {
          xb[0] = ldg_nc_v4(x1 + k);
          xb[1] = ldg_nc_v4(x1 + k + 8);
        }
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
          const int step = 4 * hx + jj;  // real k = 32 t + 4 step + {0, 1, 2, 3}
          const uint32_t a0 = word_of(xa, 2 * jj), a2 = word_of(xa, 2 * jj + 1);
          const uint32_t a1 = word_of(xb, 2 * jj), a3 = word_of(xb, 2 * jj + 1);
          // Bytes 2 step and 2 step + 1 of the lane's 16: word step / 2, bytes 2 (step % 2)
          // and 2 (step % 2) + 1.
          const int wi = step / 2, by = 2 * (step % 2);
#pragma unroll
          for (int j = 0; j < kDecTiles; ++j) {
            const uint32_t word = word_of(wv[u][j], wi);
            const uint32_t b0 = dequant2(word, by | (by + 4) << 8, s2[j]);
            const uint32_t b1 = dequant2(word, (by + 1) | (by + 5) << 8, s2[j]);
            mma_m16n8k16(acc[j], a0, a1, a2, a3, b0, b1);
          }
        }
      }
    }
  }

  // Split-K reduction over the block's warps, then one store per output.
#pragma unroll
  for (int j = 0; j < kDecTiles; ++j)
#pragma unroll
    for (int r = 0; r < 4; ++r) red[v][j][r][lane] = acc[j][r];
  __syncthreads();
  for (int idx = threadIdx.x; idx < kDecTiles * 4 * 32; idx += kDecWarps * 32) {
    const int j = idx / 128, r = (idx / 32) % 4, l = idx % 32;
    float s = 0.f;
#pragma unroll
    for (int q = 0; q < kDecWarps; ++q) s += red[q][j][r][l];
    const int m = (l >> 2) + 8 * (r / 2), n = n0 + 8 * j + 2 * (l & 3) + (r % 2);
    if (m < M && n < N) y[static_cast<size_t>(m) * N + n] = __float2half_rn(s);
  }
}

// ----------------------------------------------------------------------------------------
// General path: one output per thread, FP32 (every product exact, one running sum).
__global__ void w4a16_general_kernel(const __half* __restrict__ x, const uint8_t* __restrict__ w,
                                     const __half* __restrict__ w_scales, __half* __restrict__ y,
                                     int M, int N, int K, int group) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  const int m = blockIdx.y * blockDim.y + threadIdx.y;
  if (m >= M || n >= N) return;
  const __half* xr = x + static_cast<size_t>(m) * K;
  const uint8_t* wr = w + static_cast<size_t>(n) * (K / 2);
  const __half* sr = w_scales + static_cast<size_t>(n) * (K / group);
  float acc = 0.f;
  for (int k = 0; k < K; k += 2) {
    const uint32_t byte = __ldg(wr + k / 2);
    const float s = __half2float(sr[k / group]);
    acc = fmaf(__half2float(xr[k]), e2m1_decode_f32(byte) * s, acc);
    acc = fmaf(__half2float(xr[k + 1]), e2m1_decode_f32(byte >> 4) * s, acc);
  }
  y[static_cast<size_t>(m) * N + n] = __float2half_rn(acc);
}

bool aligned(const void* p, uintptr_t n) {
  return (reinterpret_cast<uintptr_t>(p) % n) == 0;
}

// ----------------------------------------------------------------------------------------
// Scratch cache: the only mutable state of this file. Holds the x_h and w_tail buffers (grown,
// never shrunk), the TMA descriptors for x_h's current (pointer, M, K), the stream-K slots and
// flags, the scale flag, the epoch counters and the one-time kernel attributes, SM count and
// driver entry point.
using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                   const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                   const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                   CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
struct ScratchCache {
  __half* x_h = nullptr;
  size_t x_h_bytes = 0;
  uint4* w_tail = nullptr;  // (N, kTailStages, 4) 16-byte words; only when K % 256 != 0
  size_t w_tail_bytes = 0;
  float4* partials = nullptr;  // stream-K slots: (sm_count, 32, 256) float4
  uint32_t* flags = nullptr;   // (sm_count) stream-K flags, then the scale flag; zeroed once
  uint32_t sk_epoch = 0;       // stream-K calls
  uint32_t call_epoch = 0;     // every call (the scale flag)
  CUtensorMap map[2];          // x_h boxes of kTileM (wide) and kTileMNarrow (narrow) rows
  const void* map_ptr = nullptr;
  int map_M = 0, map_K = 0;
  EncodeTiledFn encode = nullptr;
  bool smem_configured = false;
  int sm_count = 0;
};
ScratchCache g_scratch;

bool grow(void** p, size_t* have, size_t need) {
  if (need <= *have) return true;
  if (*p) cudaFree(*p);
  *p = nullptr;
  *have = 0;
  if (cudaMalloc(p, need) != cudaSuccess) return false;
  *have = need;
  return true;
}

// Returns false on any failure (the caller then falls back to the general path).
bool prepare_scratch(int M, int N, int K) {
  ScratchCache& sc = g_scratch;
  if (!grow(reinterpret_cast<void**>(&sc.x_h), &sc.x_h_bytes,
            static_cast<size_t>(M) * K * sizeof(__half)))
    return false;
  if (K % kChunkK != 0 && !grow(reinterpret_cast<void**>(&sc.w_tail), &sc.w_tail_bytes,
                                static_cast<size_t>(N) * kTailStages * 4 * sizeof(uint4)))
    return false;
  if (!sc.encode) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !fn)
      return false;
    sc.encode = reinterpret_cast<EncodeTiledFn>(fn);
  }
  if (sc.map_ptr != sc.x_h || sc.map_M != M || sc.map_K != K) {
    // x_h rows are K halves = K / 8 16-byte units: a valid TMA stride. Boxes that reach past K
    // (the tail's last stage, K < 64) or past M are zero-filled.
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(K), static_cast<cuuint64_t>(M)};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(K) * sizeof(__half)};
    const cuuint32_t elem_strides[2] = {1, 1};
    for (int i = 0; i < 2; ++i) {
      const cuuint32_t box[2] = {kStageK, static_cast<cuuint32_t>(i == 0 ? kTileM : kTileMNarrow)};
      if (sc.encode(&sc.map[i], CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, sc.x_h, dims, strides, box,
                    elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
        sc.map_ptr = nullptr;
        return false;
      }
    }
    sc.map_ptr = sc.x_h;
    sc.map_M = M;
    sc.map_K = K;
  }
  if (sc.sm_count == 0) {
    int dev = 0, count = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        count <= 0)
      return false;
    sc.sm_count = count;
  }
  if (!sc.partials) {
    if (cudaMalloc(&sc.partials, static_cast<size_t>(sc.sm_count) * 32 * 256 * sizeof(float4)) !=
        cudaSuccess)
      return false;
    if (cudaMalloc(&sc.flags, (sc.sm_count + 1) * sizeof(uint32_t)) != cudaSuccess ||
        cudaMemset(sc.flags, 0, (sc.sm_count + 1) * sizeof(uint32_t)) != cudaSuccess) {
      cudaFree(sc.partials);
      sc.partials = nullptr;
      return false;
    }
  }
  if (!sc.smem_configured) {
    const void* kernels[4] = {
        reinterpret_cast<const void*>(w4a16_wgmma_persistent_kernel<kTileM, 32>),
        reinterpret_cast<const void*>(w4a16_wgmma_persistent_kernel<kTileM, 128>),
        reinterpret_cast<const void*>(w4a16_wgmma_persistent_kernel<kTileMNarrow, 32>),
        reinterpret_cast<const void*>(w4a16_wgmma_persistent_kernel<kTileMNarrow, 128>)};
    sc.smem_configured = true;
    for (const void* k : kernels)
      sc.smem_configured =
          sc.smem_configured && cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                     kSmemBytes) == cudaSuccess;
    if (!sc.smem_configured) return false;
  }
  return true;
}

void launch_general(const __half* x, const uint8_t* w, const __half* w_scales, __half* y, int M,
                    int N, int K, int group) {
  const dim3 block(32, 8);
  const dim3 grid((N + 31) / 32, (M + 7) / 8);
  w4a16_general_kernel<<<grid, block>>>(x, w, w_scales, y, M, N, K, group);
}

// x -> x_h, w's K tail -> w_tail, and the scale check. Needs 16-byte aligned x and w.
void launch_prep(const __half* x, const uint8_t* w, const __half* w_scales, int M, int N, int K,
                 int group, uint32_t epoch) {
  const long long chunk_items = 32LL * ((static_cast<long long>(M) * (K / kChunkK) + 1) / 2);
  const int tail_steps = (K % kChunkK) / 16;
  const long long scale_items =
      (static_cast<long long>(N) * (K / group) + kScalesPerThread - 1) / kScalesPerThread;
  PrepGrid pg;
  pg.chunk_blocks = static_cast<int>((chunk_items + kPrologueThreads - 1) / kPrologueThreads);
  pg.x_tail_blocks = (M * tail_steps + kPrologueThreads - 1) / kPrologueThreads;
  pg.w_tail_blocks = (N * ((tail_steps + 3) / 4) + kPrologueThreads - 1) / kPrologueThreads;
  pg.scale_blocks = static_cast<int>((scale_items + kPrologueThreads - 1) / kPrologueThreads);
  const int blocks = pg.chunk_blocks + pg.x_tail_blocks + pg.w_tail_blocks + pg.scale_blocks;
  w4a16_prep_kernel<<<blocks, kPrologueThreads>>>(x, w, w_scales, g_scratch.x_h, g_scratch.w_tail,
                                                  g_scratch.flags + g_scratch.sm_count, epoch, M, N,
                                                  K, group, pg);
}

#ifndef W4A16_USE_PDL
#define W4A16_USE_PDL 1  // 0: plain launch of the main kernel (for timing comparisons only)
#endif

// The main kernel, launched with programmatic stream serialization (PDL) on the legacy
// default stream, so that its CTAs launch and set up while the prologue drains; its producer
// thread waits (griddepcontrol.wait) before the first TMA read of x_h, its consumer threads
// before their first read of w_tail and the scale flag. If the extended launch is refused, its
// error is cleared and the kernel is launched plainly.
template <int kTM, int kGroup>
void launch_main(int grid, const uint8_t* w, const __half* w_scales, __half* y, int M, int N, int K,
                 bool vec, const StreamK& sk, uint32_t epoch) {
  const uint4* w_tail = g_scratch.w_tail;
  const CUtensorMap& map = g_scratch.map[kTM == kTileM ? 0 : 1];
  const uint32_t* big_flag = g_scratch.flags + g_scratch.sm_count;
  if (W4A16_USE_PDL) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(kThreads);
    cfg.dynamicSmemBytes = kSmemBytes;
    cfg.stream = 0;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    if (cudaLaunchKernelEx(&cfg, w4a16_wgmma_persistent_kernel<kTM, kGroup>, map, w, w_scales,
                           w_tail, y, M, N, K, vec, sk, big_flag, epoch) == cudaSuccess)
      return;
    (void)cudaGetLastError();
  }
  w4a16_wgmma_persistent_kernel<kTM, kGroup><<<grid, kThreads, kSmemBytes>>>(
      map, w, w_scales, w_tail, y, M, N, K, vec, sk, big_flag, epoch);
}

}  // namespace

// Launcher. All pointers are device pointers; everything runs on the legacy default stream.
extern "C" void solve(const __half* x, const uint8_t* w, const __half* w_scales, __half* y, int M,
                      int N, int K, int group_size) {
  if (M <= 0 || N <= 0) return;
  const bool groups_ok = group_size == 32 || group_size == 128;
  const bool rows_ok = aligned(x, 16) && aligned(w, 16);
  // Small M (decode): the mma.sync kernel, no prologue.
  if (groups_ok && rows_ok && aligned(w_scales, 4) && M <= 16 && K % kDecSegK == 0) {
    const unsigned blocks = static_cast<unsigned>((N + kDecTiles * 8 - 1) / (kDecTiles * 8));
    if (group_size == 32) {
      w4a16_decode_kernel<32><<<blocks, kDecWarps * 32>>>(x, w, w_scales, y, M, N, K);
    } else {
      w4a16_decode_kernel<128><<<blocks, kDecWarps * 32>>>(x, w, w_scales, y, M, N, K);
    }
    return;
  }
  // Tiny problems (at most 2^21 multiply-adds, K <= 128) take the one-kernel general path: it
  // finishes in a few microseconds, under the prologue + main kernel pair's floor.
  const bool tiny = static_cast<long long>(M) * N * K <= (1LL << 21) && K <= 128;
  if (tiny || !groups_ok || !rows_ok || K % 32 != 0 || !prepare_scratch(M, N, K)) {
    launch_general(x, w, w_scales, y, M, N, K, group_size);
    return;
  }
  if (++g_scratch.call_epoch == 0) ++g_scratch.call_epoch;
  const uint32_t epoch = g_scratch.call_epoch;
  launch_prep(x, w, w_scales, M, N, K, group_size, epoch);
  const int sms = g_scratch.sm_count;
  const long long tiles_n = (N + kTileN - 1) / kTileN;
  auto tiles_of = [&](int tm) { return (M + tm - 1) / tm * tiles_n; };
  auto waves_of = [&](int tm) { return (tiles_of(tm) + sms - 1) / sms; };
  // Narrow tiles (128 x rows) where their waves, each about half as long as a wide tile's
  // (plus kNarrowCost for the fixed cost of twice as many tiles), end sooner than the wide
  // tiles' waves: few wide tiles, a badly filled last wave, or M <= 128.
  const bool narrow =
      waves_of(kTileMNarrow) * kTileMNarrow * kNarrowCost < waves_of(kTileM) * kTileM;
  const int tm = narrow ? kTileMNarrow : kTileM;
  const long long tiles = tiles_of(tm);
  StreamK sk = {};
  sk.units = K / kChunkK + ((K % kChunkK) / 16 + 7) / 8;
  sk.partials = g_scratch.partials;
  sk.flags = g_scratch.flags;
  int grid = static_cast<int>(tiles < sms ? tiles : sms);
  // Stream-K where whole tiles would leave over 15% of the waves idle and a tile is at least
  // kMinSplitUnits units long (below either, the fix-up cost more than it saved): the last
  // partial wave plus one full wave (or every tile, when there are fewer tiles than SMs) split
  // along K over all CTAs, at most about sqrt(2 units) pieces per tile (each extra piece costs
  // its owner one partial-sum read, about a unit's time of either tile).
  const long long waves = (tiles + sms - 1) / sms;
  if (sk.units >= (narrow ? kMinSplitUnitsNarrow : 4) && tiles < 0.85 * waves * sms) {
    sk.sk_tiles = static_cast<int>(tiles > sms ? tiles % sms + sms : tiles);
    const int pieces = std::max(2, static_cast<int>(std::sqrt(2.0 * sk.units)));
    sk.W = sk.sk_tiles * sk.units;
    grid = static_cast<int>(std::min<long long>({sms, 1LL * sk.sk_tiles * pieces, sk.W}));
    if (++g_scratch.sk_epoch == 0) ++g_scratch.sk_epoch;
    sk.epoch = g_scratch.sk_epoch;
  }
  const bool vec_y = aligned(y, 16) && N % 8 == 0;
  if (narrow) {
    if (group_size == 32)
      launch_main<kTileMNarrow, 32>(grid, w, w_scales, y, M, N, K, vec_y, sk, epoch);
    else
      launch_main<kTileMNarrow, 128>(grid, w, w_scales, y, M, N, K, vec_y, sk, epoch);
  } else if (group_size == 32) {
    launch_main<kTileM, 32>(grid, w, w_scales, y, M, N, K, vec_y, sk, epoch);
  } else {
    launch_main<kTileM, 128>(grid, w, w_scales, y, M, N, K, vec_y, sk, epoch);
  }
}
