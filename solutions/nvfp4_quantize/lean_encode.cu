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
// The formulas are otherwise the pinned ones of challenges/nvfp4_quantize/README.md.
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

namespace {

using namespace nvfp4q;

constexpr int kThreads = 256;
constexpr int kUnroll = 4;

// max |x| as FP32 bits (non-negative floats order as integers). Call n accumulates into slot
// n % 2; its second pass clears slot (n + 1) % 2, which no kernel of call n reads.
__device__ unsigned int g_amax_bits[2];

// The bits of w = a * 2^-126 (a >= 0) rounded to one mantissa bit, the low 22 cleared: the
// E2M1 magnitude code at bit 22 (unsaturated), and as a float the code's value * 2^-126.
// kHalfUp rounds exact ties up (one add); otherwise ties go to even. Half up is only for a
// block whose reciprocal scale r is not a power of two: then gs and S are not both powers of
// two, and the challenge's oracle counts any exact hit on a rounding boundary as a tie
// (another evaluation order may land beside it) and accepts either neighbour.
template <bool kHalfUp>
__device__ __forceinline__ uint32_t e2m1_rounded_bits(float w) {
  const uint32_t b = __float_as_uint(w);
  const uint32_t c = kHalfUp ? b + 0x200000u : b + 0x1FFFFFu + ((b >> 22) & 1u);
  return c & 0xFFC00000u;
}

// Adds the code held at bit 22 of `rounded` as nibble i of a packed word.
__device__ __forceinline__ uint32_t nibble_at(uint32_t rounded, int i) {
  return 4 * i <= 22 ? rounded >> (22 - 4 * i) : rounded << (4 * i - 22);
}

// prmt.b32 in its generic form (PTX ISA, "prmt"): byte n of the result is byte (sel >> 4n) & 7
// of the pair {b, a}, or, where bit 3 of that nibble is set, that byte's sign bit replicated.
__device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

// Sign bits of the 8 elements of `raw`, at bit 4i+3 for element i. Element 2j's sign is the top
// bit of byte 1 of word j, element 2j+1's of byte 3.
__device__ __forceinline__ uint32_t sign_nibbles(const uint4& raw) {
  const uint32_t top03 = prmt(raw.x, raw.y, 0x7531u);  // top bytes of elements 0..3
  const uint32_t top47 = prmt(raw.z, raw.w, 0x7531u);  // and of 4..7
  const uint32_t even = prmt(top03, top47, 0xECA8u);   // byte j: 0xFF iff element 2j < 0
  const uint32_t odd = prmt(top03, top47, 0xFDB9u);    // byte j: element 2j + 1
  return (even & 0x08080808u) | (odd & 0x80808080u);
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

// rule0_codes without the overflow split, ties rounded up where kHalfUp (see
// e2m1_rounded_bits).
template <bool kHalfUp>
__device__ __forceinline__ uint32_t rule0_codes_lean(const float v[8], float r) {
  uint32_t word = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    word +=
        nibble_at(e2m1_rounded_bits<kHalfUp>(__fmul_rn(__fmul_rn(fabsf(v[i]), r), 0x1p-126f)), i);
  }
  return saturate_nibbles(word);
}

// Rule 1's candidate over 8 elements in block units: au = |x| * u (u = 2^-e per block), r =
// the candidate's 1 / (ds * S) times 2^e * 2^-126, Du = its (S * amax) / 1536 times 2^-e *
// 2^126. au * r is |x| * r_pinned * 2^-126 rounded once; its rounded bits hold the code and,
// as a float, value * 2^-126, so value * Du - au is the block-unit error (value * D - |x|) *
// 2^-e in one fused operation. Codes up to 8 (one too many for saturated elements; the
// caller checks bit 3 of each nibble).
template <bool kHalfUp>
__device__ __forceinline__ uint32_t candidate8_units(const float au[8], float r, float Du,
                                                     float* err) {
  uint32_t word = 0;
  float e = *err;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const uint32_t v = e2m1_rounded_bits<kHalfUp>(__fmul_rn(au[i], r));
    word += nibble_at(v, i);
    const float d = __fmaf_rn(__uint_as_float(v), Du, -au[i]);
    e = __fmaf_rn(d, d, e);
  }
  *err = e;
  return word;
}

// Both candidates of rule 1 in block units: magnitude codes of elements 0..7 and 8..15 and
// the error sums, for the 6 candidate (w6) and the 4 candidate (w4).
template <bool kHalfUp>
__device__ __forceinline__ void candidates_units(const float alo[8], const float ahi[8], float r6,
                                                 float Du6, float r4, float Du4, uint2* w6,
                                                 uint2* w4, float* e6, float* e4) {
  w6->x = candidate8_units<kHalfUp>(alo, r6, Du6, e6);
  w6->y = candidate8_units<kHalfUp>(ahi, r6, Du6, e6);
  w4->x = candidate8_units<kHalfUp>(alo, r4, Du4, e4);
  w4->y = candidate8_units<kHalfUp>(ahi, r4, Du4, e4);
}

// True where the float is a power of two (mantissa bits 0; the callers' values are normal).
__device__ __forceinline__ bool power_of_two(float v) {
  return (__float_as_uint(v) & 0x7FFFFFu) == 0u;
}

// Rule 1's codes (w0, w1: elements 0..7 and 8..15, magnitudes only) and scale code of one
// block, on the pinned formulas (fast_encode.cu's exact path).
__device__ __forceinline__ uint32_t rule1_exact(const float lo[8], const float hi[8], float s6,
                                                float amax, float ds, uint32_t* w0, uint32_t* w1) {
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
  *w0 = four ? a4 : a6;
  *w1 = four ? b4 : b6;
  return amax > 0.0f ? (four ? c4 : c6) : 0u;
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
        scale_code = e4m3_rne(__fmul_rn(__fmul_rn(bmax, 1.0f / 6.0f), gs));
        const float S = e4m3_value(scale_code);
        if (S != 0.0f) {
          const float r = __fdiv_rn(gs, S);
          const bool split = !(r <= 3.4e38f);
          const float inv = split ? __fdiv_rn(1.0f, S) : 0.0f;
          if (split || power_of_two(r)) {
            w0 = rule0_codes(lo, r, split, gs, inv);
            w1 = rule0_codes(hi, r, split, gs, inv);
          } else {
            w0 = rule0_codes_lean<true>(lo, r);
            w1 = rule0_codes_lean<true>(hi, r);
          }
        }
      } else {
        const float s6 = __fmul_rn(__fmul_rn(bmax, 1.0f / 6.0f), gs);
        const uint32_t c6 = e4m3_rne(s6), c4 = e4m3_rne(__fmul_rn(s6, 1.5f));
        const float S6 = e4m3_value(c6), S4 = e4m3_value(c4);
        const float D6 = __fmul_rn(__fmul_rn(S6, amax), 1.0f / 1536.0f);
        const float D4 = __fmul_rn(__fmul_rn(S4, amax), 1.0f / 1536.0f);
        // Block units u = 2^-e, e = the exponent of bmax: bmax >= 2^-119 keeps every scaled
        // reciprocal and D normal and finite (see candidate8_units).
        const uint32_t eb = __float_as_uint(bmax) >> 23;
        bool fast = eb >= 8u && eb <= 253u && S6 != 0.0f && S4 != 0.0f && D4 <= 3.4e38f;
        if (fast) {
          const float unit = __uint_as_float((254u - eb) << 23);
          const float r6 = __frcp_rn(__fmul_rn(__fmul_rn(__fmul_rn(ds, S6), unit), 0x1p126f));
          const float r4 = __frcp_rn(__fmul_rn(__fmul_rn(__fmul_rn(ds, S4), unit), 0x1p126f));
          const float Du6 = __fmul_rn(__fmul_rn(D6, unit), 0x1p126f);
          const float Du4 = __fmul_rn(__fmul_rn(D4, unit), 0x1p126f);
          float alo[8], ahi[8];
#pragma unroll
          for (int i = 0; i < 8; ++i) {
            alo[i] = __fmul_rn(fabsf(lo[i]), unit);
            ahi[i] = __fmul_rn(fabsf(hi[i]), unit);
          }
          float e6 = 0.0f, e4 = 0.0f;
          uint2 w6, w4;
          if (power_of_two(r6) || power_of_two(r4)) {
            candidates_units<false>(alo, ahi, r6, Du6, r4, Du4, &w6, &w4, &e6, &e4);
          } else {
            candidates_units<true>(alo, ahi, r6, Du6, r4, Du4, &w6, &w4, &e6, &e4);
          }
          const uint32_t a6 = w6.x, b6 = w6.y, a4 = w4.x, b4 = w4.y;
          fast = ((a6 | b6 | a4 | b4) & 0x88888888u) == 0u;  // no code over 7: none saturated
          const bool four = e4 < e6;
          scale_code = four ? c4 : c6;
          w0 = four ? a4 : a6;
          w1 = four ? b4 : b6;
        }
        if (!fast) scale_code = rule1_exact(lo, hi, s6, amax, ds, &w0, &w1);
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
