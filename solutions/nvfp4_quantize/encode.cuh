// encode.cuh: the device helpers the nvfp4_quantize ladder's rungs share: BF16 loads and
// unpacking, block absolute maxima, E4M3 scale rounding and the exact E2M1 encoding steps. A
// rung includes it and says `using namespace nvfp4q;`; what a rung adds of its own stays in
// its file. The judge hashes this header into the rung's cache key and lists it in its record.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace nvfp4q {

// 16 bytes of x, not kept in L1. The second pass is the last use of x: its loads carry an
// L2 evict-first policy (PTX ISA, "createpolicy"; ld's .L2::cache_hint operand).
template <bool kLastUse>
__device__ __forceinline__ uint4 load_x(const uint4* p) {
  uint4 v;
  if (kLastUse) {
    uint64_t policy;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p), "l"(policy));
  } else {
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
  }
  return v;
}

__device__ __forceinline__ void unpack8(const uint4& raw, float v[8]) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    v[2 * i] = __uint_as_float(w[i] << 16);
    v[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
  }
}

// max |x| over the 8 BF16 values of `raw`, on BF16 pairs: three packed maxima of magnitudes.
__device__ __forceinline__ float abs_max8(const uint4& raw) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
  const __nv_bfloat162 m =
      __hmax2(__hmax2(__habs2(h[0]), __habs2(h[1])), __hmax2(__habs2(h[2]), __habs2(h[3])));
  return fmaxf(__bfloat162float(m.x), __bfloat162float(m.y));
}

// E2M1 magnitude code of a >= 0 given as w = a * 2^-126, rounded to nearest, ties to even, not
// saturated (a < 10 gives 0..8). w's bits rounded to one mantissa bit: add just under half of
// the kept unit, plus the kept bit (bit 22, moved to the top and back down) for ties to even.
__device__ __forceinline__ uint32_t e2m1_code_unsaturated(float w) {
  const uint32_t b = __float_as_uint(w);
  return ((b + 0x1FFFFFu) + ((b << 9) >> 31)) >> 22;
}

// Saturates eight packed unsaturated codes at 6 (code 7): a nibble of 8 becomes 7.
__device__ __forceinline__ uint32_t saturate_nibbles(uint32_t word) {
  return word - ((word >> 3) & 0x11111111u);
}

// The value of magnitude code m: 0, 0.5, 1, 1.5, 2, 3, 4, 6.
__device__ __forceinline__ float e2m1_value(uint32_t m) {
  return __fmul_rn(__uint_as_float(m << 22), 0x1p126f);
}

__device__ __forceinline__ uint32_t e4m3_rne(float s) {
  return __nv_cvt_float_to_fp8(s, __NV_SATFINITE, __NV_E4M3);
}

__device__ __forceinline__ float e4m3_value(uint32_t code) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t(code), __NV_E4M3)));
}

// Rule 0's codes of 8 elements under r = gs / S (or, where that overflows, gs and 1 / S).
__device__ __forceinline__ uint32_t rule0_codes(const float v[8], float r, bool split, float gs,
                                                float inv) {
  uint32_t word = 0;
  if (!split) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      word |= e2m1_code_unsaturated(__fmul_rn(__fmul_rn(fabsf(v[i]), r), 0x1p-126f)) << (4 * i);
    }
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float a = __fmul_rn(__fmul_rn(fabsf(v[i]), gs), inv);
      word |= e2m1_code_unsaturated(__fmul_rn(a, 0x1p-126f)) << (4 * i);
    }
  }
  return saturate_nibbles(word);
}

// Rule 1's candidate over 8 elements: magnitude codes, and the squared errors added to *err in
// element order (no fused multiply-add).
__device__ __forceinline__ uint32_t candidate8(const float v[8], float r, float D, float* err) {
  uint32_t word = 0;
  float e = *err;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float a = fabsf(v[i]);
    const uint32_t m = min(e2m1_code_unsaturated(__fmul_rn(__fmul_rn(a, r), 0x1p-126f)), 7u);
    word |= m << (4 * i);
    const float d = __fsub_rn(__fmul_rn(e2m1_value(m), D), a);
    e = __fadd_rn(e, __fmul_rn(d, d));
  }
  *err = e;
  return word;
}

}  // namespace nvfp4q
