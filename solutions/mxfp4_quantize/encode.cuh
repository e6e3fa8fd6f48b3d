// encode.cuh: the device helpers the mxfp4_quantize ladder's rungs share: BF16 loads and
// unpacking, block absolute maxima, E8M0 scales and the exact E2M1 encoding steps. A rung
// includes it and says `using namespace mxfp4q;`; what a rung adds of its own stays in its
// file. The judge hashes this header into the rung's cache key and lists it in its record.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace mxfp4q {

// A streaming 16-byte load that does not linger in L1.
__device__ __forceinline__ uint4 load_stream(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ float bf16_low(uint32_t w) {
  return __uint_as_float(w << 16);
}

__device__ __forceinline__ float bf16_high(uint32_t w) {
  return __uint_as_float(w & 0xFFFF0000u);
}

__device__ __forceinline__ float abs_max8(const uint4& raw) {
  const __nv_bfloat162 a = __hmax2(__habs2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x)),
                                   __habs2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y)));
  const __nv_bfloat162 b = __hmax2(__habs2(*reinterpret_cast<const __nv_bfloat162*>(&raw.z)),
                                   __habs2(*reinterpret_cast<const __nv_bfloat162*>(&raw.w)));
  const __nv_bfloat162 m = __hmax2(a, b);
  return fmaxf(__bfloat162float(m.x), __bfloat162float(m.y));
}

}  // namespace mxfp4q
