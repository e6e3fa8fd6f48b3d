// whole_block.cu: the fifth rung of the MXFP4 quantization ladder. lean_encode.cu's rule and
// arithmetic, with one thread per block of 32 instead of four. lean_encode.cu issued about 120
// instructions per thread for 8 elements, half of them on the ALU pipe (ncu, table5_weights,
// 2026-12-03, H200: ALU 72% busy, issue 69%): the four lanes of a block each reduced the amax
// with two shuffles, each worked out the scale and its branches, and each stored its own word.
// Here a thread holds the whole block, so that work is done once per 32 elements. What changed:
//   - Loads: the thread's four 16-byte pieces are one 64-byte stretch of x. No one load of a
//     warp covers whole sectors (it takes half of 32 sectors), but the four together do, and
//     they go through L1 (ld.global.nc with L1 allocation), which serves the later halves.
//   - The amax of 32 elements on BF16 pairs without shuffles; the scale once a block; one
//     16-byte store of the codes and one byte of scale per thread, both coalesced in the warp.
//   - The codes placed by byte permutes: the rounding leaves each code in byte 3 of its word
//     (4 * bits + 2^23 - 1 plus bit 22: the same tie to even as lean_encode.cu's, two bits
//     higher), three prmt gather four of them, and the sign bits join by one LOP3 per four.
//   - An all-zero block takes the same path (its codes are 0 and its sign bits are masked off)
//     instead of a branch.
//   - Measured on an H200 (2026-12-03, --action run, one block a round): the same loads without
//     L1 allocation (ld.global.nc.L1::no_allocate, lean_encode.cu's) took 43.6 us on
//     table5_weights against 39.2; a grid sized so that every thread did the same number of
//     blocks (629 CTAs of 256 instead of a full wave of 660, whose last round finds half of
//     the threads idle) took 39.2 us against 38.7.
//   - Two blocks a round: 128 B of x in flight per thread while the two before it are encoded.
//     Measured on an H200 (2026-12-03, --action run, two rounds, table5_weights / activations):
//     one block a round (48 registers, five CTAs per SM) 38.6-38.9 / 40.1 us; two a round at
//     128 registers (two CTAs per SM) 38.3-38.4 / 39.7; at 80 registers (launch bounds without
//     the minimum: three CTAs per SM) 40.9-41.0 / 42.1-42.2; held to 64 registers (four CTAs,
//     104 B of spills) 59.6-59.9 / 61.0-61.4.
// The rule is the pinned one of challenges/mxfp4_quantize/README.md.
//
//   run:  scripts/run_challenge challenges/mxfp4_quantize --solution
//   solutions/mxfp4_quantize/whole_block.cu
#include <cuda_bf16.h>

#include <cstdint>

#include "encode.cuh"  // the ladder's shared device helpers

namespace {

using namespace mxfp4q;

constexpr int kThreads = 256;

// prmt.b32 (PTX ISA, "prmt"): byte n of the result is byte (sel >> 4n) & 7 of the pair {b, a},
// or, where bit 3 of that nibble is set, that byte's sign bit replicated.
__device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

// Multipliers passed as kernel arguments: ptxas cannot turn a product by them into a shift, so
// they stay IMADs on the FMA pipe, which the ALU-heavy rounding otherwise leaves idle.
struct Multipliers {
  uint32_t four, k512, sixteen;
};

// w = |x / S| * 2^-126. Its E2M1 magnitude code (w's bits rounded to one mantissa bit, ties to
// even; see lean_encode.cu) lands in byte 3 of the result, with zeros above it (w <= 6 * 2^-126
// keeps 4 * bits below 2^27).
__device__ __forceinline__ uint32_t rounded(float w, const Multipliers& k) {
  const uint32_t b = __float_as_uint(w);
  const uint32_t tie = (b * k.k512) >> 31;  // bit 22 of b
  return b * k.four + 0x7FFFFFu + tie;
}

// The 8 codes of 8 elements, low nibble first. kOneProduct: `mul` is 2^(1 - code) and
// |x| * mul is x / S * 2^-126 rounded once; otherwise `mul` is 1/S and a second product scales
// by 2^-126. sign_mask is 0x08080808, or 0 for an all-zero block (whose -0 must encode as 0).
template <bool kOneProduct>
__device__ __forceinline__ uint32_t encode8(const uint4& raw, float mul, uint32_t sign_mask,
                                            const Multipliers& k) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
  uint32_t y[8];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float x = h ? bf16_high(w[j]) : bf16_low(w[j]);
      const float s =
          kOneProduct ? __fmul_rn(fabsf(x), mul) : __fmul_rn(__fmul_rn(fabsf(x), mul), 0x1p-126f);
      y[2 * j + h] = rounded(s, k);
    }
  }
  // Byte j of `even`: the code of element 2j; of `odd`: of element 2j + 1.
  const uint32_t even = prmt(prmt(y[0], y[2], 0x0073u), prmt(y[4], y[6], 0x7300u), 0x7610u);
  const uint32_t odd = prmt(prmt(y[1], y[3], 0x0073u), prmt(y[5], y[7], 0x7300u), 0x7610u);
  // The top bytes of elements 0..3 and 4..7, then byte j: 0xFF where element 2j (2j + 1) < 0.
  const uint32_t top03 = prmt(w[0], w[1], 0x7531u);
  const uint32_t top47 = prmt(w[2], w[3], 0x7531u);
  const uint32_t even_sign = prmt(top03, top47, 0xECA8u);
  const uint32_t odd_sign = prmt(top03, top47, 0xFDB9u);
  const uint32_t lo = even | (even_sign & sign_mask);
  const uint32_t hi = odd | (odd_sign & sign_mask);
  return hi * k.sixteen + lo;
}

__device__ __forceinline__ __nv_bfloat162 habs(uint32_t w) {
  return __habs2(*reinterpret_cast<const __nv_bfloat162*>(&w));
}

__device__ __forceinline__ float block_amax(const uint4 (&v)[4]) {
  __nv_bfloat162 m[4];
#pragma unroll
  for (int u = 0; u < 4; ++u)
    m[u] = __hmax2(__hmax2(habs(v[u].x), habs(v[u].y)), __hmax2(habs(v[u].z), habs(v[u].w)));
  const __nv_bfloat162 r = __hmax2(__hmax2(m[0], m[1]), __hmax2(m[2], m[3]));
  return fmaxf(__bfloat162float(r.x), __bfloat162float(r.y));
}

// One block of 32: its scale code (lean_encode.cu's, from the bits of the amax) and codes.
__device__ __forceinline__ void quantize_block(const uint4 (&v)[4], uint4* q, uint8_t* scale,
                                               const Multipliers& k) {
  const float m = block_amax(v);
  const int from_bits = int((__float_as_uint(m) + 0x3FFFFFu) >> 23) - 2;
  const uint32_t code = m == 0.0f ? 0u : uint32_t(max(from_bits, 1));
  const uint32_t sign_mask = code == 0u ? 0u : 0x08080808u;
  uint4 out;
  if (code <= 150u) {
    // 2^(1 - code): a normal power of two up to code 127, a subnormal one up to 150 (code 0
    // gives 2, harmless on zeros).
    const float mul =
        code <= 127u ? __uint_as_float((128u - code) << 23) : __uint_as_float(1u << (150u - code));
    out =
        make_uint4(encode8<true>(v[0], mul, sign_mask, k), encode8<true>(v[1], mul, sign_mask, k),
                   encode8<true>(v[2], mul, sign_mask, k), encode8<true>(v[3], mul, sign_mask, k));
  } else {
    const float inv = __uint_as_float((254u - code) << 23);  // 1/S for codes 151..253
    out = make_uint4(
        encode8<false>(v[0], inv, sign_mask, k), encode8<false>(v[1], inv, sign_mask, k),
        encode8<false>(v[2], inv, sign_mask, k), encode8<false>(v[3], inv, sign_mask, k));
  }
  *q = out;
  *scale = uint8_t(code);
}

__device__ __forceinline__ void load_block(const uint4* p, uint4 (&v)[4]) {
#pragma unroll
  for (int u = 0; u < 4; ++u) v[u] = __ldg(p + u);
}

// Thread t of the grid handles blocks t, t + stride, ... two a round (b and b + stride, with
// stride = threads in the grid), the next round's two loaded before this round's are worked on.
// Index is 32-bit where that holds. The explicit minimum of one CTA per SM lets ptxas take 128
// registers (two CTAs of 256 per SM); see the header for what the register budget does.
template <typename Index>
__global__ void __launch_bounds__(kThreads, 1)
    quantize_kernel(const uint4* x, uint4* q, uint8_t* scales, Index blocks, Multipliers k) {
  const Index stride = Index(gridDim.x) * kThreads;
  Index b = Index(blockIdx.x) * kThreads + threadIdx.x;
  if (b >= blocks) return;
  uint4 v[4], w[4];
  load_block(x + b * 4, v);
  if (b + stride < blocks) load_block(x + (b + stride) * 4, w);
  for (;;) {
    const Index next = b + 2 * stride;
    uint4 n[4], m[4];
    if (next < blocks) load_block(x + next * 4, n);
    if (next + stride < blocks) load_block(x + (next + stride) * 4, m);
    quantize_block(v, q + b, scales + b, k);
    if (b + stride < blocks) quantize_block(w, q + b + stride, scales + b + stride, k);
    if (next >= blocks) break;
    b = next;
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      v[u] = n[u];
      w[u] = m[u];
    }
  }
}

// One wave of resident blocks at most.
template <typename Index>
unsigned grid_for(size_t blocks) {
  static size_t wave = 0;
  if (wave == 0) {
    int device = 0, sms = 0, per_sm = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, quantize_kernel<Index>, kThreads, 0);
    wave = size_t(sms) * size_t(per_sm > 0 ? per_sm : 1);
  }
  const size_t needed = (blocks + kThreads - 1) / kThreads;
  return unsigned(needed < wave ? needed : wave);
}

template <typename Index>
void launch(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales, size_t blocks) {
  quantize_kernel<Index><<<grid_for<Index>(blocks), kThreads>>>(
      reinterpret_cast<const uint4*>(x), reinterpret_cast<uint4*>(q), scales, Index(blocks),
      Multipliers{4u, 512u, 16u});
}

}  // namespace

extern "C" void solve(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales, int M, int K) {
  const size_t blocks = size_t(M) * K / 32;
  // 32-bit piece indices (4 per block) while they cannot overflow, strides included.
  if (blocks < (size_t(1) << 29))
    launch<uint32_t>(x, q, scales, blocks);
  else
    launch<size_t>(x, q, scales, blocks);
}
