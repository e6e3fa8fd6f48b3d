// nvfp4_matmul rung "mma_sync": packed-FP4 tiles through a cp.async pipeline, dequantized in
// registers straight into mma.sync.m16n8k16 (FP16 in, FP32 accumulate) fragments.
//
//   c (M, N) half = alpha * deq(a) @ deq(b)^T
//   a (M, K/2) packed e2m1, a_scales (M, K/16) e4m3; b (N, K/2), b_scales (N, K/16) likewise.
//
// Ladder position: first tensor-core rung (no earlier rung is committed in this folder; the
// implied previous rung is "one output per thread", kept below as the general path).
// What it does:
//   - 128 (M) x 256 (N) block tile, 8 warps as 2 x 4, 64 x 64 warp tile, BK = 64 per stage,
//     4-stage cp.async pipeline of the PACKED bytes and the scale bytes (13.5 KB a stage).
//   - Each thread dequantizes its own fragments from shared memory: one 8-byte load per
//     tile row per stage, a shift/mask that turns two e2m1 nibbles into two FP16 values
//     (times 2^-14, exact), one HMUL2 by the FP16 block scale (times 2^7, exact).
//   - K order inside each 64-wide stage is permuted identically for A and B (a dot product
//     does not care about order), so that each quad thread owns one whole 16-element scale
//     block per row: thread t of a quad takes packed bytes [8t, 8t+8) of the 32-byte row
//     chunk, i.e. scale block t. Step s (0..3) of the stage uses word s/2 of those 8 bytes.
//   - Every FP16 operand value is exact (see "Exactness"); products are exact in FP32 and
//     the tensor core accumulates in FP32; alpha * 2^14 is applied in the FP32 epilogue.
// Why: packed operands cost a quarter of the FP16 bytes through L2 and shared memory, and
//   register dequantization needs no FP16 staging buffer.
// Shared-memory traffic per stage and block: cp.async writes 13.5 KB; fragment reads are
//   (64 + 64) rows x 32 B x 8 warps = 32 KB + 1 KB of scale bytes, about 46 KB, i.e. 360 clk
//   at 128 B/clk/SM against 1024 clk of tensor work at the dense FP16 peak (128x256x64 FMA /
//   2048 FMA/clk/SM): shared memory is not the bound.
// Expected bound (before measuring): issue and integer-ALU throughput of the
//   dequantization. Per SMSP and stage: 256 HMMA against ~256 half2 conversions x ~4 integer
//   ops + 256 HMUL2 + loads, and each A element is converted by the 4 warps that share it
//   (2.7x redundancy overall). Predicted ~450-550 TF/s.
// Judged: `scripts/run_challenge challenges/nvfp4_matmul --solution
//   solutions/nvfp4_matmul/mma_sync.cu --action submit` on an NVIDIA H200 (132 SMs, driver
//   580.159.04, judge 0.2.0, 2026-11-22): table5 1.0139 ms = 228.8 TF/s (0.29x cuBLAS FP16 on
//   pre-dequantized operands in the same run), rev1 0.4579 ms = 225.1 TF/s (0.30x). `--action
//   sweep` of the same code (2026-11-23, same machine kind; run timing), ratio to cuBLAS: 0.19
//   (1024^3), 0.31 (2048^3), 0.28 (4096^3), 0.28 (8192^3), 0.27 (4096x4096x8192), 0.24
//   (2048x2880x2880); 1000x3000x4112, 3000x5000x1040, 5120x5184x1040 take the general path (1.7
//   TF/s). The committed record (results/nvfp4_matmul/nvidia-h200/) and sweep
//   (solutions/nvfp4_matmul/README.md) are later runs of this file.
// Measured while developing, with a standalone driver outside the repository (the judged
//   figures above supersede it): NVIDIA H200 (132 SMs, driver 580.159.04), 2026-11-22, with
//   .scratch/driver.cu (a local driver, not committed): median of 30 calls, each after a 256 MB L2
//   flush, CUDA events around solve(): table5 (2048x18432x3072) 1.0137 ms = 228.8 TF/s; rev1
//   (2048x8192x3072) 0.4571 ms = 225.5 TF/s. cuBLAS FP16 (FP32 accumulate) on pre-dequantized
//   operands, same timing: 815.5 and 785.7 TF/s. ptxas: 254 registers, 0 spills, 55,296 B dynamic
//   shared memory. SASS: HMMA.16816.F32, no local memory.
// Why the prediction missed by 2x: per warp and stage the SASS holds 128 HMMA against 243
//   LOP3 + 175 IMAD.SHL + 33 SHF + 144 HMUL2 + ~40 LDS. With 2 warps per SMSP and a
//   __syncthreads per stage, both warps of an SMSP likely convert (integer pipes) and then
//   both issue HMMAs, so the two phases barely overlap. Next step: convert step s+1 under
//   the HMMAs of step s (register double buffer), or dequantize each element once into
//   shared memory and ldmatrix it; the wgmma rung (wgmma.cu) takes the other road.
// Exactness: an e2m1 nibble s|e1e0|m placed as FP16 bits s<<15 | (e1e0m)<<9 is exactly its
//   value times 2^-14 (e=0 lands on the FP16 subnormal 2^-15 = 0.5 * 2^-14). Multiplying by
//   the e4m3 scale times 2^7 (<= 57344, exact) gives value*scale*2^-7: a multiple of 2^-17
//   with at most 6 significant bits and magnitude <= 21, exact in FP16. So each FP16 operand
//   is exactly deq * 2^-7 and the FP32 accumulator holds exactly-rounded FP32 sums of
//   deq(a)*deq(b)*2^-14; the epilogue multiplies by alpha * 2^14 in FP32.
// General path: shapes with K % 64 != 0 or misaligned pointers go to one-output-per-thread
//   FP32 code (nvfp4_matmul_general). M and N tails run on the fast path (zero-filled rows,
//   guarded stores).
// Command: nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Xptxas -v \
//            -DSOLUTION='"../solutions/nvfp4_matmul/mma_sync.cu"' .scratch/driver.cu
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "hopper.cuh"  // the ladder's shared Hopper primitives

namespace {

using namespace nvfp4_hopper;

// ----------------------------------------------------------------------------------------
// Tile configuration
constexpr int kBlockM = 128;  // rows of a per block
constexpr int kBlockN = 256;  // rows of b per block
constexpr int kBlockK = 64;   // K elements per pipeline stage
constexpr int kStages = 4;
constexpr int kWarpsM = 2;
constexpr int kWarpsN = 4;
constexpr int kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kWarpM = kBlockM / kWarpsM;  // 64
constexpr int kWarpN = kBlockN / kWarpsN;  // 64
constexpr int kMTiles = kWarpM / 16;       // m16 tiles per warp
constexpr int kNTiles = kWarpN / 8;        // n8 tiles per warp
constexpr int kRowBytes = kBlockK / 2;     // packed bytes per tile row per stage
constexpr int kRowScales = kBlockK / 16;   // scale bytes per tile row per stage
constexpr int kStageA = kBlockM * kRowBytes;
constexpr int kStageB = kBlockN * kRowBytes;
constexpr int kStageSA = kBlockM * kRowScales;
constexpr int kStageSB = kBlockN * kRowScales;
constexpr int kStageBytes = kStageA + kStageB + kStageSA + kStageSB;
constexpr int kSmemBytes = kStages * kStageBytes;

static_assert(kBlockM % (16 * kWarpsM) == 0 && kBlockN % (8 * kWarpsN) == 0,
              "warp tiles must be whole m16 x n8 MMA tiles");
static_assert(kBlockK == 64,
              "the fragment mapping gives each quad thread one 16-element "
              "scale block of a 64-element stage (8 bytes per row)");
static_assert(kBlockM * kRowBytes / 16 <= kThreads && kBlockN * kRowBytes / 16 == 2 * kThreads,
              "cp.async work split: A one 16-byte chunk per thread at most, B exactly two");
static_assert(kStageBytes % 16 == 0, "stages must stay 16-byte aligned for cp.async");
static_assert(kSmemBytes <= 227 * 1024, "shared memory per block on sm_90 is 227 KB");
static_assert(kThreads == 256, "launch bounds below assume 256 threads");

// ----------------------------------------------------------------------------------------
// PTX primitives of this rung alone (the shared ones are in hopper.cuh)

// cp.async with zero fill: PTX ISA "Data Movement: cp.async" (sm_80+). src_bytes 0 writes
// zeros (used for rows past M or N).
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_4(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}
// PTX ISA "cp.async.commit_group" / "cp.async.wait_group".
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ uint2 lds64(uint32_t addr) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(addr));
  return v;
}
__device__ __forceinline__ uint32_t lds_u8(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.u8 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}

// e4m3 code (low byte) -> FP16x2 broadcast of scale * 2^7. PTX ISA "cvt" (cvt.rn.f16x2.e4m3x2,
// sm_89+) is exact: every e4m3 value is an FP16 value; * 128 stays exact (<= 57344).
__device__ __forceinline__ uint32_t e4m3_to_f16x2_x128(uint32_t code) {
  const uint16_t pair = static_cast<uint16_t>(code | (code << 8));
  uint32_t h2;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(h2) : "h"(pair));
  uint32_t out;
  asm("mul.rn.f16x2 %0, %1, %2;\n" : "=r"(out) : "r"(h2), "r"(0x58005800u));  // 128.0
  return out;
}

// PTX ISA "Warp Level Matrix Multiply-Accumulate: mma" m16n8k16 .row.col f32.f16.f16.f32.
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                          uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// ----------------------------------------------------------------------------------------
// Fast kernel
//
// grid.x: M tiles (fastest, so the blocks running together share b tiles in L2),
// grid.y: N tiles. Requires K % 64 == 0, 16-byte aligned a / b, 4-byte aligned scales.
__device__ __forceinline__ void load_stage(uint32_t stage_smem, const uint8_t* a,
                                           const uint8_t* a_scales, const uint8_t* b,
                                           const uint8_t* b_scales, int m0, int n0, int kt, int M,
                                           int N, int K) {
  const int tid = threadIdx.x;
  const size_t row_bytes = static_cast<size_t>(K) / 2, row_scales = K / 16;
  {  // A data: kBlockM rows x 2 chunks of 16 bytes
    const int row = tid >> 1, half = tid & 1;
    const bool ok = m0 + row < M;
    const uint8_t* src = ok ? a + (m0 + row) * row_bytes + kt * kRowBytes + half * 16 : a;
    cp_async_16(stage_smem + row * kRowBytes + half * 16, src, ok ? 16 : 0);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {  // B data: kBlockN rows x 2 chunks
    const int idx = tid + i * kThreads, row = idx >> 1, half = idx & 1;
    const bool ok = n0 + row < N;
    const uint8_t* src = ok ? b + (n0 + row) * row_bytes + kt * kRowBytes + half * 16 : b;
    cp_async_16(stage_smem + kStageA + row * kRowBytes + half * 16, src, ok ? 16 : 0);
  }
  if (tid < kBlockM) {  // A scales: 4 bytes per row
    const bool ok = m0 + tid < M;
    const uint8_t* src = ok ? a_scales + (m0 + tid) * row_scales + kt * kRowScales : a_scales;
    cp_async_4(stage_smem + kStageA + kStageB + tid * kRowScales, src, ok ? 4 : 0);
  }
  {  // B scales
    const bool ok = n0 + tid < N;
    const uint8_t* src = ok ? b_scales + (n0 + tid) * row_scales + kt * kRowScales : b_scales;
    cp_async_4(stage_smem + kStageA + kStageB + kStageSA + tid * kRowScales, src, ok ? 4 : 0);
  }
}

__global__ void __launch_bounds__(kThreads, 1)
    nvfp4_mma_sync_kernel(const uint8_t* __restrict__ a, const uint8_t* __restrict__ a_scales,
                          const uint8_t* __restrict__ b, const uint8_t* __restrict__ b_scales,
                          float out_scale, __half* __restrict__ c, int M, int N, int K,
                          bool c_pairs_aligned) {
  extern __shared__ __align__(16) uint8_t smem[];
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const int m0 = blockIdx.x * kBlockM, n0 = blockIdx.y * kBlockN;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int wm = warp / kWarpsN, wn = warp % kWarpsN;
  const int num_k = K / kBlockK;

  float acc[kMTiles][kNTiles][4];
#pragma unroll
  for (int i = 0; i < kMTiles; ++i)
#pragma unroll
    for (int j = 0; j < kNTiles; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < num_k)
      load_stage(smem_base + s * kStageBytes, a, a_scales, b, b_scales, m0, n0, s, M, N, K);
    cp_async_commit();
  }

  // Per-thread fragment row offsets inside a stage.
  const uint32_t a_row0 = (wm * kWarpM + g) * kRowBytes + 8 * t;
  const uint32_t b_row0 = (wn * kWarpN + g) * kRowBytes + 8 * t;
  const uint32_t sa_row0 = (wm * kWarpM + g) * kRowScales + t;
  const uint32_t sb_row0 = (wn * kWarpN + g) * kRowScales + t;

  for (int kt = 0; kt < num_k; ++kt) {
    cp_async_wait<kStages - 2>();
    __syncthreads();
    {
      const int next = kt + kStages - 1;
      if (next < num_k)
        load_stage(smem_base + (next % kStages) * kStageBytes, a, a_scales, b, b_scales, m0, n0,
                   next, M, N, K);
      cp_async_commit();
    }
    const uint32_t st = smem_base + (kt % kStages) * kStageBytes;
    uint2 araw[kMTiles][2];
    uint32_t ascale[kMTiles][2];
#pragma unroll
    for (int i = 0; i < kMTiles; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = i * 16 + h * 8;
        araw[i][h] = lds64(st + a_row0 + r * kRowBytes);
        ascale[i][h] =
            e4m3_to_f16x2_x128(lds_u8(st + kStageA + kStageB + sa_row0 + r * kRowScales));
      }
    uint2 braw[kNTiles];
    uint32_t bscale[kNTiles];
#pragma unroll
    for (int j = 0; j < kNTiles; ++j) {
      braw[j] = lds64(st + kStageA + b_row0 + j * 8 * kRowBytes);
      bscale[j] = e4m3_to_f16x2_x128(
          lds_u8(st + kStageA + kStageB + kStageSA + sb_row0 + j * 8 * kRowScales));
    }
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      // Step s: word s/2 of each 8-byte row piece; nibble pairs (2p, 2p+4) feed the fragment
      // slots (2t, 2t+1), pairs (2p+1, 2p+5) the slots (2t+8, 2t+9), p = s % 2.
      uint32_t af[kMTiles][4];
#pragma unroll
      for (int i = 0; i < kMTiles; ++i) {
        const uint32_t w0 = (s >> 1) ? araw[i][0].y : araw[i][0].x;
        const uint32_t w1 = (s >> 1) ? araw[i][1].y : araw[i][1].x;
        if (s & 1) {
          af[i][0] = hmul2(e2m1x2_to_f16x2_pow2m14<2>(w0), ascale[i][0]);
          af[i][1] = hmul2(e2m1x2_to_f16x2_pow2m14<2>(w1), ascale[i][1]);
          af[i][2] = hmul2(e2m1x2_to_f16x2_pow2m14<3>(w0), ascale[i][0]);
          af[i][3] = hmul2(e2m1x2_to_f16x2_pow2m14<3>(w1), ascale[i][1]);
        } else {
          af[i][0] = hmul2(e2m1x2_to_f16x2_pow2m14<0>(w0), ascale[i][0]);
          af[i][1] = hmul2(e2m1x2_to_f16x2_pow2m14<0>(w1), ascale[i][1]);
          af[i][2] = hmul2(e2m1x2_to_f16x2_pow2m14<1>(w0), ascale[i][0]);
          af[i][3] = hmul2(e2m1x2_to_f16x2_pow2m14<1>(w1), ascale[i][1]);
        }
      }
#pragma unroll
      for (int j = 0; j < kNTiles; ++j) {
        const uint32_t wb = (s >> 1) ? braw[j].y : braw[j].x;
        uint32_t b0, b1;
        if (s & 1) {
          b0 = hmul2(e2m1x2_to_f16x2_pow2m14<2>(wb), bscale[j]);
          b1 = hmul2(e2m1x2_to_f16x2_pow2m14<3>(wb), bscale[j]);
        } else {
          b0 = hmul2(e2m1x2_to_f16x2_pow2m14<0>(wb), bscale[j]);
          b1 = hmul2(e2m1x2_to_f16x2_pow2m14<1>(wb), bscale[j]);
        }
#pragma unroll
        for (int i = 0; i < kMTiles; ++i) mma_16816(acc[i][j], af[i], b0, b1);
      }
    }
  }
  cp_async_wait<0>();

  // Epilogue: accumulator (row g / g+8, cols 2t, 2t+1) of each m16n8 tile -> half2 stores.
#pragma unroll
  for (int i = 0; i < kMTiles; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = m0 + wm * kWarpM + i * 16 + h * 8 + g;
      if (m >= M) continue;
      __half* crow = c + static_cast<size_t>(m) * N;
#pragma unroll
      for (int j = 0; j < kNTiles; ++j) {
        const int n = n0 + wn * kWarpN + j * 8 + 2 * t;
        const float v0 = acc[i][j][2 * h] * out_scale, v1 = acc[i][j][2 * h + 1] * out_scale;
        if (c_pairs_aligned && n + 1 < N) {
          *reinterpret_cast<__half2*>(crow + n) = __floats2half2_rn(v0, v1);
        } else {
          if (n < N) crow[n] = __float2half_rn(v0);
          if (n + 1 < N) crow[n + 1] = __float2half_rn(v1);
        }
      }
    }
}

__global__ void nvfp4_matmul_general(const uint8_t* __restrict__ a,
                                     const uint8_t* __restrict__ a_scales,
                                     const uint8_t* __restrict__ b,
                                     const uint8_t* __restrict__ b_scales, float alpha,
                                     __half* __restrict__ c, int M, int N, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  const int m = blockIdx.y * blockDim.y + threadIdx.y;
  if (m >= M || n >= N) return;
  const size_t row_bytes = static_cast<size_t>(K) / 2, row_scales = K / 16;
  const uint8_t* pa = a + m * row_bytes;
  const uint8_t* pb = b + n * row_bytes;
  float acc = 0.f;
  for (int kb = 0; kb < K / 16; ++kb) {
    float blk = 0.f;
#pragma unroll
    for (int q = 0; q < 8; ++q) {
      const uint32_t x = __ldg(pa + kb * 8 + q), y = __ldg(pb + kb * 8 + q);
      blk += e2m1_decode_f32(x) * e2m1_decode_f32(y);
      blk += e2m1_decode_f32(x >> 4) * e2m1_decode_f32(y >> 4);
    }
    const float s = e4m3_decode_f32(__ldg(a_scales + m * row_scales + kb)) *
                    e4m3_decode_f32(__ldg(b_scales + n * row_scales + kb));
    acc = fmaf(blk, s, acc);
  }
  c[static_cast<size_t>(m) * N + n] = __float2half_rn(alpha * acc);
}

bool aligned(const void* p, uintptr_t n) {
  return (reinterpret_cast<uintptr_t>(p) % n) == 0;
}

}  // namespace

// Launcher. All pointers are device pointers; launches on the legacy default stream.
// The only mutable static is `smem_configured`, a once-per-process flag for the kernel's
// dynamic shared-memory attribute.
extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  const bool fast = K % kBlockK == 0 && aligned(a, 16) && aligned(b, 16) && aligned(a_scales, 4) &&
                    aligned(b_scales, 4);
  if (!fast) {
    const dim3 block(32, 8);
    const dim3 grid((N + 31) / 32, (M + 7) / 8);
    nvfp4_matmul_general<<<grid, block>>>(a, a_scales, b, b_scales, alpha, c, M, N, K);
    return;
  }
  static bool smem_configured = false;
  if (!smem_configured) {
    // On failure the launch below fails too, and the caller sees that error.
    smem_configured =
        cudaFuncSetAttribute(nvfp4_mma_sync_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kSmemBytes) == cudaSuccess;
  }
  const dim3 grid((M + kBlockM - 1) / kBlockM, (N + kBlockN - 1) / kBlockN);
  const bool pairs = aligned(c, 4) && N % 2 == 0;
  nvfp4_mma_sync_kernel<<<grid, kThreads, kSmemBytes>>>(a, a_scales, b, b_scales, alpha * 16384.0f,
                                                        c, M, N, K, pairs);
}
