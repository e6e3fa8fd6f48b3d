// fast_encode.cu: the third rung of the NVFP4 quantization ladder. two_pass.cu's two passes (the
// second walking x backwards, onto what the first left in L2), with the arithmetic per element
// cut down: at 4.8 TB/s over 132 SMs an element of x may cost about 20 instructions before the
// arithmetic, not the memory, sets the time, and two_pass.cu spent about 30 (rule 0) and 80
// (rule 1). What changed:
//   - E2M1 rounding by integer arithmetic. Scaling |v| by 2^-126 lays E2M1's grid on FP32's
//     (1.0 becomes the smallest normal, 0.5 the subnormal 2^-127, 6.0 is 1.5 * 2^-124), so
//     rounding those bits to one mantissa bit, ties to even, gives the 3-bit magnitude code;
//     the code's value is the reverse (code << 22, times 2^126). Seven compares become three
//     integer operations (four with rule 1's saturation; rule 0 saturates a whole word of
//     eight codes in three).
//   - One thread per block of 16 (two 16-byte loads, one 8-byte store of codes, one scale
//     byte): the block's scale, its divisions and its conversions are computed once, not by
//     both threads of a pair, and rule 1's squared errors are summed in the pinned order.
//   - Rule 0: one correctly rounded gs / S per block, then x * (gs / S) per element, an order
//     the challenge's README allows, instead of a division per element (where gs / S
//     overflows, as for a tensor of BF16 subnormals, (x * gs) * (1 / S)).
//   - Rule 1: deq = e2m1 value * ((S * amax) * (1 / 1536)), one product per element (the
//     README's tie bound covers an order that forms S * amax first).
//   - The block amax on BF16 pairs (__hmax2 of __habs2: three packed maxima for eight values).
//   - One kernel per rule, so rule 0 carries none of rule 1's registers.
//   - The amax lives in two alternating slots: the pass that reads one clears the other for the
//     next call, so no memset is launched.
//   Near the E2M1 boundaries 0.25 and 0.75 the scaling by 2^-126 makes |v| subnormal and
//   rounds it once more (to 2^-23): values within 2^-21 of those boundaries may take the
//   other code, inside the challenge's 2^-20 tie band, and the report counts them as ties.
// The formulas are otherwise the pinned ones of challenges/nvfp4_quantize/README.md.
// Judged on an H200 (2026-11-23, --action submit): table5_weights 0.081 ms (rule 0, 0.51x the
// device-to-device copy of the same bytes) and 0.127 ms (rule 1, 0.32x); two_pass.cu: 0.27x
// and 0.07x. ncu (on the version with two threads per block, 0.46x): the quantize pass kept
// the ALU pipe 74% busy, so integer work, not DRAM, sets its time.
//
//   run:  scripts/run_challenge challenges/nvfp4_quantize --solution
//   solutions/nvfp4_quantize/fast_encode.cu
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "encode.cuh"  // the ladder's shared device helpers

namespace {

using namespace nvfp4q;

constexpr int kThreads = 256;
constexpr int kUnroll = 4;

// max |x| as FP32 bits (non-negative floats order as integers). Call n accumulates into slot
// n % 2; its second pass clears slot (n + 1) % 2, which no kernel of call n reads.
__device__ unsigned int g_amax_bits[2];

// Sign bits of the 8 elements of `raw`, at bit 4i+3 for element i.
__device__ __forceinline__ uint32_t sign_nibbles(const uint4& raw) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
  uint32_t s = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) s |= (((w[i] >> 12) & 0x8u) | ((w[i] >> 24) & 0x80u)) << (8 * i);
  return s;
}

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
      float lo[8], hi[8];
      unpack8(raw[u][0], lo);
      unpack8(raw[u][1], hi);
      const float bmax = fmaxf(abs_max8(raw[u][0]), abs_max8(raw[u][1]));
      uint32_t w0 = 0, w1 = 0, scale_code;
      if (kRule == 0) {
        scale_code = e4m3_rne(__fmul_rn(__fdiv_rn(bmax, 6.0f), gs));
        const float S = e4m3_value(scale_code);
        if (S != 0.0f) {
          const float r = __fdiv_rn(gs, S);
          const bool split = !(r <= 3.4e38f);
          const float inv = split ? __fdiv_rn(1.0f, S) : 0.0f;
          w0 = rule0_codes(lo, r, split, gs, inv);
          w1 = rule0_codes(hi, r, split, gs, inv);
        }
      } else {
        const float s6 = __fmul_rn(__fdiv_rn(bmax, 6.0f), gs);
        const uint32_t c6 = e4m3_rne(s6), c4 = e4m3_rne(__fmul_rn(s6, 1.5f));
        const float S6 = e4m3_value(c6), S4 = e4m3_value(c4);
        const float r6 = S6 == 0.0f ? 0.0f : __fdiv_rn(1.0f, __fmul_rn(ds, S6));
        const float r4 = S4 == 0.0f ? 0.0f : __fdiv_rn(1.0f, __fmul_rn(ds, S4));
        const float D6 = __fmul_rn(__fmul_rn(S6, amax), 1.0f / 1536.0f);
        const float D4 = __fmul_rn(__fmul_rn(S4, amax), 1.0f / 1536.0f);
        float e6 = 0.0f, e4 = 0.0f;
        const uint32_t a6 = candidate8(lo, r6, D6, &e6), b6 = candidate8(hi, r6, D6, &e6);
        const uint32_t a4 = candidate8(lo, r4, D4, &e4), b4 = candidate8(hi, r4, D4, &e4);
        const bool four = e4 < e6 && amax > 0.0f;
        scale_code = amax > 0.0f ? (four ? c4 : c6) : 0u;
        w0 = four ? a4 : a6;
        w1 = four ? b4 : b6;
      }
      // Signs only where the scale is nonzero: code 0, never 8, where S is 0.
      if (e4m3_value(scale_code) == 0.0f) {
        w0 = w1 = 0u;
      } else {
        w0 |= sign_nibbles(raw[u][0]);
        w1 |= sign_nibbles(raw[u][1]);
      }
      q[b] = make_uint2(w0, w1);
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
