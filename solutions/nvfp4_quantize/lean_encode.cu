// lean_encode.cu: the fourth rung of the NVFP4 quantization ladder. fast_encode.cu's two passes
// and one thread per block of 16, with fewer integer operations per element, the ones that set
// its time (the SM's ALU pipe, which issues 16 lanes a clock against the FMA pipe's 32). What
// changed:
//   - Rule 1 in block units. Each element is scaled once by u = 2^-e, e the exponent of the
//     block's amax (exact for every value that can round to a nonzero code), and each
//     candidate's reciprocal is scaled by 2^e * 2^-126 per block, so one multiply per element
//     and candidate lands on the E2M1-on-FP32 grid that fast_encode.cu reached with two. The
//     rounded bits are that grid's value (code << 22 is value * 2^-126), so the dequantized
//     value times the block-scaled D = (S * amax) / 1536 is one fused multiply-add, and the
//     squared error is another: two FMA-pipe operations per element and candidate where
//     fast_encode.cu spent a shift, five multiplies and two adds. The challenge's tie rule for
//     the 4-vs-6 choice (2^-17 of the summed magnitudes) covers fused operations; the shift
//     back from block units is a power of two and changes no comparison.
//   - Saturation leaves the fast path: a rule 1 candidate saturates only under an E4M3
//     subnormal scale far below its unrounded value; a block where either candidate would
//     (a code over 7), or whose amax is below 2^-119 or whose dequantized values overflow,
//     takes fast_encode.cu's exact path instead.
//   - Sign nibbles by byte permutes (prmt with sign replication): five operations for eight
//     elements instead of about twenty shifts and masks.
//   - bmax / 6 as bmax * (1/6), both correctly rounded: at most one ulp off the pinned
//     division, inside the challenge's 2^-20 tie band of the E4M3 rounding that follows.
//   - Ties rounded half up where that is fair: the E2M1 rounding adds half a unit instead of
//     extracting the kept bit for ties to even, in every block whose reciprocal scale is not a
//     power of two (rule 0's gs / S, rule 1's 1 / (ds * S)). There gs and S are not both
//     powers of two, and the challenge's oracle counts an exact hit on a rounding boundary as
//     a tie that either neighbour may take (another evaluation order lands beside it); the
//     report counts them. Blocks with a power-of-two reciprocal, where exact midpoints must
//     round to even (the `midpoints` cases), keep ties to even.
// The formulas are otherwise the pinned ones of challenges/nvfp4_quantize/README.md. The block
// encoder (these steps, one thread per block of 16) lives in lean.cuh, which one_launch.cu
// shares; this file holds the two passes.
// Judged on an H200 (2026-11-23, --action submit, driver 580.159.04): table5_weights 0.075 ms
// (rule 0, 0.55x the device-to-device copy of the same bytes) and 0.093 ms (rule 1, 0.44x);
// activations 0.076 ms (0.55x) and 0.096 ms (0.43x); fast_encode.cu in the same session:
// 0.51x and 0.32x. What bounds it now: see solutions/nvfp4_quantize/README.md.
//
//   run:  scripts/run_challenge challenges/nvfp4_quantize --solution
//   solutions/nvfp4_quantize/lean_encode.cu
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "encode.cuh"  // the ladder's shared device helpers
#include "lean.cuh"    // the block encoder these steps describe (encode_block)

namespace {

using namespace nvfp4q;

constexpr int kThreads = 256;
constexpr int kUnroll = 4;

// max |x| as FP32 bits (non-negative floats order as integers). Call n accumulates into slot
// n % 2; its second pass clears slot (n + 1) % 2, which no kernel of call n reads.
__device__ unsigned int g_amax_bits[2];

__global__ void __launch_bounds__(kThreads)
    amax_kernel(const uint4* x, size_t pieces, unsigned int* slot) {
  const size_t stride = size_t(gridDim.x) * kThreads;
  float m = 0.0f;
  for (size_t base = size_t(blockIdx.x) * kThreads + threadIdx.x; base < pieces;
       base += stride * kUnroll) {
    uint4 raw[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t i = base + u * stride;
      raw[u] = i < pieces ? load_x<false>(x + i) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float v[8];
      unpack8(raw[u], v);
#pragma unroll
      for (int i = 0; i < 8; ++i) m = fmaxf(m, fabsf(v[i]));
    }
  }
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, o));
  __shared__ float warp_max[kThreads / 32];
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kThreads / 32; ++w) m = fmaxf(m, warp_max[w]);
    atomicMax(slot, __float_as_uint(m));
  }
}

constexpr int kBlocksPerStep = 2;

// One thread per block of 16 (two 16-byte loads); blocks are visited from the end, so that
// the second pass starts on what the first left in L2.
template <int kRule>
__global__ void __launch_bounds__(kThreads)
    quantize_kernel(const uint4* x, uint2* q, uint8_t* scales, float* global_scale, size_t blocks,
                    const unsigned int* slot, unsigned int* next_slot) {
  const float amax = __uint_as_float(*slot);
  const float gs = amax > 0.0f ? (kRule == 0 ? 2688.0f : 1536.0f) / amax : 1.0f;
  const float ds = 1.0f / gs;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    *global_scale = gs;
    *next_slot = 0u;
  }
  const size_t stride = size_t(gridDim.x) * kThreads;
  for (size_t base = size_t(blockIdx.x) * kThreads + threadIdx.x; base < blocks;
       base += stride * kBlocksPerStep) {
    uint4 raw[kBlocksPerStep][2];
#pragma unroll
    for (int u = 0; u < kBlocksPerStep; ++u) {
      const size_t j = base + u * stride;
      const size_t b = blocks - 1 - j;
      raw[u][0] = j < blocks ? load_x<true>(x + 2 * b) : make_uint4(0, 0, 0, 0);
      raw[u][1] = j < blocks ? load_x<true>(x + 2 * b + 1) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kBlocksPerStep; ++u) {
      const size_t j = base + u * stride;
      if (j >= blocks) continue;
      const size_t b = blocks - 1 - j;
      uint2 codes;
      const uint32_t scale_code = encode_block<kRule>(raw[u][0], raw[u][1], amax, gs, ds, &codes);
      q[b] = codes;
      scales[b] = uint8_t(scale_code);
    }
  }
}

int resident_grid(const void* kernel) {
  int device = 0, sms = 0, per_sm = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0);
  return sms * (per_sm > 0 ? per_sm : 1);
}

}  // namespace

extern "C" void solve(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales, float* global_scale,
                      int M, int K, int rule) {
  static int amax_grid = 0, rule0_grid = 0, rule1_grid = 0;
  static unsigned int* slots = nullptr;
  static unsigned int calls = 0;
  if (amax_grid == 0) {
    amax_grid = resident_grid(reinterpret_cast<const void*>(amax_kernel));
    rule0_grid = resident_grid(reinterpret_cast<const void*>(quantize_kernel<0>));
    rule1_grid = resident_grid(reinterpret_cast<const void*>(quantize_kernel<1>));
    cudaGetSymbolAddress(reinterpret_cast<void**>(&slots), g_amax_bits);
  }
  const unsigned int s = calls++ & 1u;
  const size_t pieces = size_t(M) * K / 8, blocks = pieces / 2;
  const auto grid = [](size_t work, int resident) {
    const size_t waves = (work + kThreads - 1) / kThreads;
    return unsigned(waves < size_t(resident) ? waves : size_t(resident));
  };
  const uint4* x4 = reinterpret_cast<const uint4*>(x);
  uint2* q2 = reinterpret_cast<uint2*>(q);
  amax_kernel<<<grid(pieces, amax_grid), kThreads>>>(x4, pieces, slots + s);
  if (rule == 0) {
    quantize_kernel<0><<<grid(blocks, rule0_grid), kThreads>>>(x4, q2, scales, global_scale, blocks,
                                                               slots + s, slots + (s ^ 1u));
  } else {
    quantize_kernel<1><<<grid(blocks, rule1_grid), kThreads>>>(x4, q2, scales, global_scale, blocks,
                                                               slots + s, slots + (s ^ 1u));
  }
}
