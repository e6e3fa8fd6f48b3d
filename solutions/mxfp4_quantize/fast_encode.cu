// fast_encode.cu: the third rung of the MXFP4 quantization ladder. vectorized.cu's one pass and
// access pattern, with fewer instructions per element: at 4.8 TB/s over 132 SMs an element of
// x may cost about 20 before the arithmetic, not the memory, sets the time, and the compare
// chain of the E2M1 rounding alone took 14. What changed:
//   - E2M1 rounding by integer arithmetic. x / S is exact (S is a power of two); scaling it by
//     2^-126 as well lays E2M1's grid on FP32's (1.0 becomes the smallest normal, 0.5 the
//     subnormal 2^-127, 6.0 is 1.5 * 2^-124), so rounding those bits to one mantissa bit, ties
//     to even, gives the 3-bit magnitude code: three integer operations instead of seven
//     compares and their sums (no saturation: |x / S| <= 6 by the choice of S).
//   - The block amax on BF16 pairs (__hmax2 of __habs2: three packed maxima for eight values).
//   - The sign nibbles of eight elements come from their BF16 words with shifts and masks,
//     and the scale's reciprocal from the exponent field, with no division.
// Judged on an H200 (2026-11-23, --action submit): table5_weights 0.0485 ms, activations
// 0.0499 ms, 0.78x and 0.80x the device-to-device copy of the same bytes, 2969 GB/s
// (vectorized.cu: 0.52x).
// ncu: the ALU pipe is 79% busy, so the integer work, not DRAM, still sets the time.
// The rule is the pinned one of challenges/mxfp4_quantize/README.md.
//
//   run:  scripts/run_challenge challenges/mxfp4_quantize --solution
//   solutions/mxfp4_quantize/fast_encode.cu
#include <cuda_bf16.h>

#include <cstdint>

#include "encode.cuh"  // the ladder's shared device helpers

namespace {

using namespace mxfp4q;

constexpr int kThreads = 256;
constexpr int kUnroll = 4;

// E2M1 magnitude code of a >= 0 given as w = a * 2^-126, rounded to nearest, ties to even:
// w's bits rounded to one mantissa bit (add just under half of the kept unit, plus the kept
// bit 22, moved to the top and back down, for ties to even). No saturation: |x / S| <= 6 by
// the choice of S, so the codes stay in 0..7.
__device__ __forceinline__ uint32_t e2m1_code(float w) {
  const uint32_t b = __float_as_uint(w);
  return ((b + 0x1FFFFFu) + ((b << 9) >> 31)) >> 22;
}

// Sign bits of the 8 elements of `raw`, at bit 4i+3 for element i.
__device__ __forceinline__ uint32_t sign_nibbles(const uint4& raw) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
  uint32_t s = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) s |= (((w[i] >> 12) & 0x8u) | ((w[i] >> 24) & 0x80u)) << (8 * i);
  return s;
}

// The 8 codes of one thread's 8 values, packed low nibble first, given 1/S (a power of two:
// x * inv is exact).
__device__ __forceinline__ uint32_t encode8(const uint4& raw, float inv) {
  const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
  uint32_t out = 0;
#pragma unroll
  for (int w = 0; w < 4; ++w) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float x = h ? bf16_high(words[w]) : bf16_low(words[w]);
      const float scaled = __fmul_rn(__fmul_rn(fabsf(x), inv), 0x1p-126f);
      out |= e2m1_code(scaled) << (4 * (2 * w + h));
    }
  }
  return out | sign_nibbles(raw);
}

// Thread t of a warp step handles quarter t % 4 of block (step * 8 + t / 4).
__global__ void __launch_bounds__(kThreads)
    quantize_kernel(const uint4* x, uint32_t* q, uint8_t* scales, size_t blocks) {
  const size_t quarters = blocks * 4;  // 16-byte pieces of x
  const size_t stride = size_t(gridDim.x) * kThreads;
  const size_t lane = threadIdx.x & 31;
  // The loop test uses the warp's first lane, so that the whole warp runs the shuffles.
  for (size_t base = size_t(blockIdx.x) * kThreads + threadIdx.x; base - lane < quarters;
       base += stride * kUnroll) {
    uint4 raw[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t i = base + u * stride;
      raw[u] = i < quarters ? load_stream(x + i) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t i = base + u * stride;
      // The four quarters of a block are neighbouring lanes (i % 4 == lane % 4, since the
      // stride is a multiple of 32): reduce the amax over them.
      float m = abs_max8(raw[u]);
      m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, 1));
      m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, 2));
      if (i >= quarters) continue;
      // Scale: FP32 exponent field of bmax / 6, plus one unless its mantissa bits are zero.
      const uint32_t bits = __float_as_uint(m / 6.0f);
      const uint32_t code = (bits >> 23) + ((bits & 0x7FFFFFu) != 0 ? 1u : 0u);
      // 1/S = 2^(127 - code), for codes 1..253 (t < 2^126 keeps them there).
      const float inv = __uint_as_float((254u - code) << 23);
      q[i] = code == 0 ? 0u : encode8(raw[u], inv);
      if ((i & 3) == 0) scales[i / 4] = uint8_t(code);
    }
  }
}

}  // namespace

extern "C" void solve(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales, int M, int K) {
  static int grid = 0;
  if (grid == 0) {
    int device = 0, sms = 0, per_sm = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, quantize_kernel, kThreads, 0);
    grid = sms * (per_sm > 0 ? per_sm : 1);
  }
  const size_t blocks = size_t(M) * K / 32;
  const size_t steps = (blocks * 4 + kThreads - 1) / kThreads;
  const unsigned g = unsigned(steps < size_t(grid) ? steps : size_t(grid));
  quantize_kernel<<<g, kThreads>>>(reinterpret_cast<const uint4*>(x),
                                   reinterpret_cast<uint32_t*>(q), scales, blocks);
}
