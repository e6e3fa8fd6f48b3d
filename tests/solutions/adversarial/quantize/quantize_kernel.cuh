// The quantization fixtures' shared kernels: solutions/nvfp4_quantize/naive.cu and
// solutions/mxfp4_quantize/naive.cu with one switch per bug, so that each fixture differs
// from a correct quantizer in exactly one way. Used by
// tests/harness/gpu_quantize_adversarial_test.cc.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cstdint>

namespace adversarial_quantize {

enum class Bug {
  kNone,             // correct
  kHalfAway,         // E2M1 ties rounded away from zero
  kFlipOne,          // one code (block 0's first element far from any boundary) flipped
  kFlushSubnormals,  // BF16 subnormal inputs read as 0
  kAlwaysRule0,      // NVFP4: ignores `rule`
  kNoGlobalScale,    // NVFP4: never writes global_scale
  kGlobalScaleUp,    // NVFP4: global scale one ulp above the pinned one, and used throughout
  kGlobalScaleUp2,   // NVFP4: two ulps above
  kFlooredScale,     // MXFP4: the OCP suggestion 2^(floor(log2 bmax) - 2), elements clamped
};

__device__ unsigned int g_amax_bits;

__global__ void reset_amax() {
  g_amax_bits = 0;
}

template <Bug kBug>
__device__ __forceinline__ float load(const __nv_bfloat16* x, size_t i) {
  const float v = __bfloat162float(x[i]);
  if (kBug == Bug::kFlushSubnormals && fabsf(v) < 0x1p-126f) return 0.0f;
  return v;
}

template <Bug kBug>
__global__ void amax_kernel(const __nv_bfloat16* x, size_t n) {
  float m = 0.0f;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    m = fmaxf(m, fabsf(load<kBug>(x, i)));
  }
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, o));
  if ((threadIdx.x & 31) == 0) atomicMax(&g_amax_bits, __float_as_uint(m));
}

template <Bug kBug>
__device__ __forceinline__ uint32_t e2m1_round(float v) {
  const float a = fabsf(v);
  const bool away = kBug == Bug::kHalfAway;
  // Boundaries between neighbouring magnitudes; at a boundary the even code wins (ties to
  // even) unless rounding half away from zero.
  const float kMid[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  uint32_t mag = 0;
  for (int c = 1; c < 8; ++c) {
    const bool up = away ? a >= kMid[c - 1] : ((c & 1) ? a > kMid[c - 1] : a >= kMid[c - 1]);
    if (up) mag = uint32_t(c);
  }
  return (signbit(v) ? 8u : 0u) | mag;
}

__device__ __forceinline__ float e2m1_value(uint32_t code) {
  const float kMagnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float m = kMagnitude[code & 7];
  return (code & 8) ? -m : m;
}

__device__ __forceinline__ uint32_t e4m3_rne(float s) {
  return __nv_cvt_float_to_fp8(s, __NV_SATFINITE, __NV_E4M3);
}

__device__ __forceinline__ float e4m3_value(uint32_t code) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t(code), __NV_E4M3)));
}

// NVFP4, one thread per block of 16 (rules as in challenges/nvfp4_quantize/README.md).
template <Bug kBug>
__global__ void nvfp4_kernel(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales,
                             float* global_scale, size_t blocks, int rule) {
  if (kBug == Bug::kAlwaysRule0) rule = 0;
  const float amax = __uint_as_float(g_amax_bits);
  const size_t b = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  float gs = amax > 0.0f ? (rule == 0 ? 2688.0f : 1536.0f) / amax : 1.0f;
  if (kBug == Bug::kGlobalScaleUp || kBug == Bug::kGlobalScaleUp2) gs = nextafterf(gs, INFINITY);
  if (kBug == Bug::kGlobalScaleUp2) gs = nextafterf(gs, INFINITY);
  if (b == 0 && kBug != Bug::kNoGlobalScale) *global_scale = gs;
  if (b >= blocks) return;
  float v[16];
  float bmax = 0.0f;
  for (int i = 0; i < 16; ++i) {
    v[i] = load<kBug>(x, b * 16 + i);
    bmax = fmaxf(bmax, fabsf(v[i]));
  }
  uint32_t codes[16];
  uint32_t scale_code;
  if (rule == 0) {
    scale_code = e4m3_rne(bmax / 6.0f * gs);
    const float S = e4m3_value(scale_code);
    bool flipped = false;
    for (int i = 0; i < 16; ++i) {
      const float t = S == 0.0f ? 0.0f : __fdiv_rn(v[i] * gs, S);
      codes[i] = S == 0.0f ? 0u : e2m1_round<kBug>(t);
      if (kBug == Bug::kFlipOne && b == 0 && !flipped && (codes[i] & 7) != 0 &&
          fabsf(fabsf(t) - fabsf(e2m1_value(codes[i]))) < 0.01f) {
        codes[i] ^= 1u;  // the neighbouring magnitude, far from any rounding boundary
        flipped = true;
      }
    }
  } else if (amax == 0.0f) {
    scale_code = 0;
    for (int i = 0; i < 16; ++i) codes[i] = 0;
  } else {
    const float ds = 1.0f / gs;
    const float s6 = bmax / 6.0f * gs;
    const uint32_t c6 = e4m3_rne(s6), c4 = e4m3_rne(__fmul_rn(s6, 1.5f));
    uint32_t q6[16], q4[16];
    float err6 = 0.0f, err4 = 0.0f;
    for (int c = 0; c < 2; ++c) {
      const uint32_t sc = c == 0 ? c6 : c4;
      uint32_t* out = c == 0 ? q6 : q4;
      const float S = e4m3_value(sc);
      const float r = S == 0.0f ? 0.0f : __fdiv_rn(1.0f, __fmul_rn(ds, S));
      float err = 0.0f;
      for (int i = 0; i < 16; ++i) {
        out[i] = S == 0.0f ? 0u : e2m1_round<kBug>(__fmul_rn(v[i], r));
        const float deq = __fdiv_rn(__fmul_rn(__fmul_rn(e2m1_value(out[i]), S), amax), 1536.0f);
        const float d = __fsub_rn(deq, v[i]);
        err = __fadd_rn(err, __fmul_rn(d, d));
      }
      (c == 0 ? err6 : err4) = err;
    }
    const bool four = err4 < err6;
    scale_code = four ? c4 : c6;
    for (int i = 0; i < 16; ++i) codes[i] = four ? q4[i] : q6[i];
  }
  scales[b] = uint8_t(scale_code);
  for (int i = 0; i < 8; ++i) q[b * 8 + i] = uint8_t(codes[2 * i] | (codes[2 * i + 1] << 4));
}

template <Bug kBug>
void nvfp4_solve(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales, float* global_scale, int M,
                 int K, int rule) {
  const size_t n = size_t(M) * K, blocks = n / 16;
  reset_amax<<<1, 1>>>();
  amax_kernel<kBug><<<1024, 256>>>(x, n);
  nvfp4_kernel<kBug>
      <<<unsigned((blocks + 255) / 256), 256>>>(x, q, scales, global_scale, blocks, rule);
}

// MXFP4, one thread per block of 32 (challenges/mxfp4_quantize/README.md).
template <Bug kBug>
__global__ void mxfp4_kernel(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales, size_t blocks) {
  const size_t b = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= blocks) return;
  float v[32];
  float bmax = 0.0f;
  for (int i = 0; i < 32; ++i) {
    v[i] = load<kBug>(x, b * 32 + i);
    bmax = fmaxf(bmax, fabsf(v[i]));
  }
  uint32_t code;
  if (kBug == Bug::kFlooredScale) {
    // 2^(floor(log2 bmax) - 2), clamped to the E8M0 range; 0 for an all-zero block.
    const int e = bmax > 0.0f ? int((__float_as_uint(bmax) >> 23) & 0xFF) - 127 - 2 : -127;
    code = uint32_t(max(0, min(254, e + 127)));
  } else {
    const uint32_t bits = __float_as_uint(bmax / 6.0f);
    code = (bits >> 23) + ((bits & 0x7FFFFFu) != 0 ? 1u : 0u);
  }
  const float S = __uint_as_float(code == 0 ? 0x00400000u : code << 23);
  scales[b] = uint8_t(code);
  for (int i = 0; i < 16; ++i) {
    const uint32_t lo = code == 0 ? 0u : e2m1_round<kBug>(__fdiv_rn(v[2 * i], S));
    const uint32_t hi = code == 0 ? 0u : e2m1_round<kBug>(__fdiv_rn(v[2 * i + 1], S));
    q[b * 16 + i] = uint8_t(lo | (hi << 4));
  }
}

template <Bug kBug>
void mxfp4_solve(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales, int M, int K) {
  const size_t blocks = size_t(M) * K / 32;
  mxfp4_kernel<kBug><<<unsigned((blocks + 255) / 256), 256>>>(x, q, scales, blocks);
}

}  // namespace adversarial_quantize
