// mma_sync.cu: the second rung of the W4A8 grouped GEMM ladder: tensor cores through
// mma.sync m16n8k16 FP16 x FP16 -> FP32, exact in its products.
//
//   run:  build/run_challenge challenges/w4a8_grouped_gemm \
//           --solution solutions/w4a8_grouped_gemm/mma_sync.cu --action submit
//
// Shapes: x is (T, K) e4m3, x_scales (T) fp32; w is (G, N, K/2) packed e2m1, w_scales
// (G, N, K/16) e4m3, w_global (G) fp32; group_offsets (G+1) int32; y is (T, N) bf16.
//
// What changed since naive.cu: one block computes a BM x 128 tile of one expert's rows
// (BM = 128 for prefill-like routing, 32 when experts average fewer than 64 rows). The grid
// is an upper bound on the number of (expert, row tile) pairs, ceil(T/BM) + G row tiles times
// ceil(N/128) column tiles; each block maps its row-tile index to (expert, tile) with a
// warp-wide prefix sum over the experts' tile counts (empty experts have none) and exits
// when the index is past the last tile. Per 32-wide K step every thread loads 16 E4M3
// activations and 16 packed weights (one scale block) into registers, converts them to FP16
// (E4M3 -> FP16 by cvt, exact; E2M1 -> FP16 by placing the nibble's bits in an FP16
// subnormal and multiplying by 2^14, exact; times the block scale, exact: at most 6
// significant bits within [2^-10, 2688]) and stores them to shared memory, while the
// previous step's tiles feed ldmatrix + mma.sync. FP32 accumulation; the epilogue applies
// x_scales[t] * w_global[g] and writes BF16.
//
// Not done here (the next rungs): cp.async / TMA pipelining, wgmma, a persistent scheduler,
// weights dequantized in registers straight into the MMA operand.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

namespace {

constexpr int kBN = 128;          // output columns (n) per block
constexpr int kBK = 32;           // K per main-loop step (two scale blocks)
constexpr int kThreads = 256;     // 8 warps
constexpr int kStride = kBK + 8;  // smem row stride in halves: 80 B, ldmatrix conflict-free

static_assert(kBN * 2 == kThreads, "one thread per (n row, 16-element scale block) of w");

// ---- Conversions ----------------------------------------------------------------------

// 16 E4M3 codes (one uint4) -> 8 half2, exact (every E4M3 value is an FP16 value).
__device__ __forceinline__ void e4m3x16_to_half(const uint4& v, uint32_t out[8]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    __half2_raw lo = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(w[i] & 0xFFFF), __NV_E4M3);
    __half2_raw hi = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(w[i] >> 16), __NV_E4M3);
    out[2 * i] = uint32_t(lo.x) | uint32_t(lo.y) << 16;
    out[2 * i + 1] = uint32_t(hi.x) | uint32_t(hi.y) << 16;
  }
}

// One byte of packed E2M1 (element 2j low nibble, 2j+1 high) -> half2 bits of
// value * 2^-14: the nibble's sign to bit 15 and exp|mantissa to bits 11..9, so exponent
// field e and top mantissa bit m give 2^(e-15) (1 + m/2) for e > 0 and m * 2^-15 for e = 0.
__device__ __forceinline__ uint32_t e2m1x2_to_half2_bits(uint32_t byte) {
  const uint32_t lo = byte & 0xF, hi = byte >> 4;
  return ((lo & 8) << 12) | ((lo & 7) << 9) | ((hi & 8) << 28) | ((hi & 7) << 25);
}

// 16 packed E2M1 (a uint2) with their block scale -> 8 half2 of e2m1 * scale, exact.
__device__ __forceinline__ void e2m1x16_to_half(const uint2& v, uint8_t scale_code,
                                                uint32_t out[8]) {
  const __half2 two14 = __float2half2_rn(16384.0f);
  const __half s = __half(__nv_cvt_fp8_to_halfraw(scale_code, __NV_E4M3));
  const __half2 s2 = __half2(s, s);
  const uint32_t w[2] = {v.x, v.y};
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    uint32_t bits = e2m1x2_to_half2_bits((w[i / 4] >> (8 * (i % 4))) & 0xFF);
    __half2 h = *reinterpret_cast<__half2*>(&bits);
    h = __hmul2(__hmul2(h, two14), s2);  // both products exact
    out[i] = *reinterpret_cast<uint32_t*>(&h);
  }
}

// ---- Tensor-core primitives (PTX ISA: ldmatrix, 9.7.9.25; mma.m16n8k16, 9.7.14.5.8) -------

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const __half* p) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

__device__ __forceinline__ void mma_f16_f32(float c[4], const uint32_t a[4], uint32_t b0,
                                            uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// ---- Scheduler --------------------------------------------------------------------------

// Maps row-tile index `tile` to (expert, first row, end row) with a warp-wide prefix sum of
// ceil(rows_g / BM) over the experts. False when `tile` is past the last tile.
template <int BM>
__device__ bool find_tile(const int* offsets, int G, int tile, int* g_out, int* row0,
                          int* row_end) {
  const int lane = threadIdx.x & 31;
  int base = 0;  // tiles of the experts before this chunk
  for (int g0 = 0; g0 < G; g0 += 32) {
    const int g = g0 + lane;
    int rows = g < G ? offsets[g + 1] - offsets[g] : 0;
    int tiles = (rows + BM - 1) / BM;
    int incl = tiles;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      int v = __shfl_up_sync(0xffffffffu, incl, d);
      if (lane >= d) incl += v;
    }
    const int excl = base + incl - tiles;
    const unsigned hit =
        __ballot_sync(0xffffffffu, tiles > 0 && tile >= excl && tile < excl + tiles);
    if (hit) {
      const int src = __ffs(hit) - 1;
      const int e = __shfl_sync(0xffffffffu, excl, src);
      *g_out = g0 + src;
      *row0 = offsets[g0 + src] + (tile - e) * BM;
      *row_end = min(offsets[g0 + src + 1], *row0 + BM);
      return true;
    }
    base += __shfl_sync(0xffffffffu, incl, 31);
  }
  return false;
}

// ---- Kernel -----------------------------------------------------------------------------

// WM x WN warps; each warp computes (BM/WM) x (128/WN) = MI m16 tiles x NI n8 tiles.
template <int BM, int WM, int WN>
__global__ void __launch_bounds__(kThreads)
    w4a8_mma_kernel(const uint8_t* __restrict__ x, const float* __restrict__ x_scales,
                    const uint8_t* __restrict__ w, const uint8_t* __restrict__ w_scales,
                    const float* __restrict__ w_global, const int* __restrict__ offsets,
                    __nv_bfloat16* __restrict__ y, int T, int N, int K, int G) {
  static_assert(WM * WN == kThreads / 32, "the warp grid must use all 8 warps");
  constexpr int MI = BM / WM / 16, NI = kBN / WN / 8;
  static_assert(MI >= 1 && NI >= 2 && NI % 2 == 0, "warp tile: whole m16 tiles, n8 tile pairs");
  static_assert(BM * 2 <= kThreads, "one thread per (row, 16-byte half) of the x tile");
  __shared__ __align__(16) __half a_s[2][BM * kStride];
  __shared__ __align__(16) __half b_s[2][kBN * kStride];
  __shared__ int tile_info[3];

  if (threadIdx.x < 32) {
    int g = 0, r0 = 0, r1 = 0;
    bool ok = find_tile<BM>(offsets, G, blockIdx.x, &g, &r0, &r1);
    if (threadIdx.x == 0) {
      tile_info[0] = ok ? g : -1;
      tile_info[1] = r0;
      tile_info[2] = r1;
    }
  }
  __syncthreads();
  const int g = tile_info[0];
  if (g < 0) return;
  const int row0 = tile_info[1], row_end = tile_info[2];
  const int n0 = blockIdx.y * kBN;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  // Loader roles: x tile row tid/2, bytes 16*(tid%2); w tile row tid/2, scale block tid%2.
  const int a_row = tid / 2, half_k = tid % 2;
  const bool a_loader = tid < BM * 2;
  const bool a_valid = a_loader && row0 + a_row < row_end;
  const uint8_t* a_src = x + size_t(row0 + a_row) * K + 16 * half_k;
  const int b_n = n0 + tid / 2;
  const bool b_valid = b_n < N;
  const uint8_t* b_src = w + (size_t(g) * N + b_n) * (K / 2) + 8 * half_k;
  const uint8_t* s_src = w_scales + (size_t(g) * N + b_n) * (K / 16) + half_k;

  uint4 a_reg;
  uint2 b_reg;
  uint8_t s_reg;
  auto load = [&](int k0) {
    const bool in_k = k0 + 16 * half_k < K;
    a_reg = a_valid && in_k ? *reinterpret_cast<const uint4*>(a_src + k0) : make_uint4(0, 0, 0, 0);
    b_reg = b_valid && in_k ? *reinterpret_cast<const uint2*>(b_src + k0 / 2) : make_uint2(0, 0);
    s_reg = b_valid && in_k ? s_src[k0 / 16] : uint8_t(0);
  };
  auto store = [&](int buf) {
    uint32_t h[8];
    if (a_loader) {
      e4m3x16_to_half(a_reg, h);
      uint4* dst = reinterpret_cast<uint4*>(&a_s[buf][a_row * kStride + 16 * half_k]);
      dst[0] = make_uint4(h[0], h[1], h[2], h[3]);
      dst[1] = make_uint4(h[4], h[5], h[6], h[7]);
    }
    e2m1x16_to_half(b_reg, s_reg, h);
    uint4* dst = reinterpret_cast<uint4*>(&b_s[buf][(tid / 2) * kStride + 16 * half_k]);
    dst[0] = make_uint4(h[0], h[1], h[2], h[3]);
    dst[1] = make_uint4(h[4], h[5], h[6], h[7]);
  };

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

  const int wm = warp / WN, wn = warp % WN;
  const int steps = (K + kBK - 1) / kBK;
  load(0);
  store(0);
  __syncthreads();
  for (int s = 0; s < steps; ++s) {
    const int buf = s & 1;
    if (s + 1 < steps) load((s + 1) * kBK);  // global loads in flight during the MMAs
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      uint32_t af[MI][4], bf[NI][2];
#pragma unroll
      for (int i = 0; i < MI; ++i) {
        const int r = wm * (MI * 16) + i * 16 + (lane % 16);
        ldmatrix_x4(af[i], &a_s[buf][r * kStride + kk + (lane / 16) * 8]);
      }
#pragma unroll
      for (int j = 0; j < NI; j += 2) {
        // Matrices: (n j, k lo), (n j, k hi), (n j+1, k lo), (n j+1, k hi).
        const int r = wn * (NI * 8) + j * 8 + (lane / 16) * 8 + (lane % 8);
        uint32_t t[4];
        ldmatrix_x4(t, &b_s[buf][r * kStride + kk + ((lane / 8) % 2) * 8]);
        bf[j][0] = t[0], bf[j][1] = t[1], bf[j + 1][0] = t[2], bf[j + 1][1] = t[3];
      }
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) mma_f16_f32(acc[i][j], af[i], bf[j][0], bf[j][1]);
    }
    if (s + 1 < steps) store(buf ^ 1);  // the other buffer: last read before the previous sync
    __syncthreads();
  }

  // Epilogue: c fragment rows lane/4 (+8), columns 2*(lane%4) (+1).
  const float wg = w_global[g];
#pragma unroll
  for (int i = 0; i < MI; ++i) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int t = row0 + wm * (MI * 16) + i * 16 + lane / 4 + half * 8;
      if (t >= row_end) continue;
      const float xs = x_scales[t];
#pragma unroll
      for (int j = 0; j < NI; ++j) {
        const int n = n0 + wn * (NI * 8) + j * 8 + 2 * (lane % 4);
        const float v0 = xs * (wg * acc[i][j][2 * half]);
        const float v1 = xs * (wg * acc[i][j][2 * half + 1]);
        __nv_bfloat16* dst = y + size_t(t) * N + n;
        if (n + 1 < N && (N % 2) == 0) {
          *reinterpret_cast<__nv_bfloat162*>(dst) = __floats2bfloat162_rn(v0, v1);
        } else {
          if (n < N) dst[0] = __float2bfloat16_rn(v0);
          if (n + 1 < N) dst[1] = __float2bfloat16_rn(v1);
        }
      }
    }
  }
}

template <int BM, int WM, int WN>
void launch(const uint8_t* x, const float* x_scales, const uint8_t* w, const uint8_t* w_scales,
            const float* w_global, const int* group_offsets, __nv_bfloat16* y, int T, int N, int K,
            int G) {
  // At most ceil(T/BM) + G row tiles: each expert adds at most one partial tile.
  dim3 grid((T + BM - 1) / BM + G, (N + kBN - 1) / kBN);
  w4a8_mma_kernel<BM, WM, WN>
      <<<grid, kThreads>>>(x, x_scales, w, w_scales, w_global, group_offsets, y, T, N, K, G);
}

}  // namespace

extern "C" void solve(const uint8_t* x, const float* x_scales, const uint8_t* w,
                      const uint8_t* w_scales, const float* w_global, const int* group_offsets,
                      __nv_bfloat16* y, int T, int N, int K, int G) {
  if (T <= 0 || N <= 0 || G <= 0) return;
  if (T >= 64 * G) {
    launch<128, 2, 4>(x, x_scales, w, w_scales, w_global, group_offsets, y, T, N, K, G);
  } else {
    launch<32, 2, 4>(x, x_scales, w, w_scales, w_global, group_offsets, y, T, N, K, G);
  }
}
