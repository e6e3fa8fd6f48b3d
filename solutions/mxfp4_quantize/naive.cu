// naive.cu: the first rung of the MXFP4 quantization ladder: one thread per block of 32,
// following challenges/mxfp4_quantize/README.md literally. One pass over x (MXFP4 has no
// global scale), but each thread reads 64 bytes with a 64-byte stride between neighbours.
//
//   run:  scripts/run_challenge challenges/mxfp4_quantize --solution
//   solutions/mxfp4_quantize/naive.cu
#include <cuda_bf16.h>

#include <cstdint>

namespace {

// E2M1 round to nearest, ties to even, saturating at 6; the sign kept (-0 is code 8).
__device__ __forceinline__ uint32_t e2m1_rne(float v) {
  const float a = fabsf(v);
  uint32_t mag;
  if (a <= 0.25f) {
    mag = 0;
  } else if (a < 0.75f) {
    mag = 1;
  } else if (a <= 1.25f) {
    mag = 2;
  } else if (a < 1.75f) {
    mag = 3;
  } else if (a <= 2.5f) {
    mag = 4;
  } else if (a < 3.5f) {
    mag = 5;
  } else if (a <= 5.0f) {
    mag = 6;
  } else {
    mag = 7;
  }
  return (signbit(v) ? 8u : 0u) | mag;
}

__global__ void quantize_kernel(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales,
                                size_t blocks) {
  const size_t b = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= blocks) return;
  float v[32];
  float bmax = 0.0f;
  for (int i = 0; i < 32; ++i) {
    v[i] = __bfloat162float(x[b * 32 + i]);
    bmax = fmaxf(bmax, fabsf(v[i]));
  }
  // Scale: FP32 exponent field of bmax / 6, plus one unless its mantissa bits are zero.
  const uint32_t bits = __float_as_uint(bmax / 6.0f);
  const uint32_t code = (bits >> 23) + ((bits & 0x7FFFFFu) != 0 ? 1u : 0u);
  const float S = __uint_as_float(code == 0 ? 0x00400000u : code << 23);  // 2^(code - 127)
  scales[b] = uint8_t(code);
  for (int i = 0; i < 16; ++i) {
    const uint32_t lo = code == 0 ? 0u : e2m1_rne(__fdiv_rn(v[2 * i], S));
    const uint32_t hi = code == 0 ? 0u : e2m1_rne(__fdiv_rn(v[2 * i + 1], S));
    q[b * 16 + i] = uint8_t(lo | (hi << 4));
  }
}

}  // namespace

extern "C" void solve(const __nv_bfloat16* x, uint8_t* q, uint8_t* scales, int M, int K) {
  const size_t blocks = size_t(M) * K / 32;
  quantize_kernel<<<unsigned((blocks + 255) / 256), 256>>>(x, q, scales, blocks);
}
