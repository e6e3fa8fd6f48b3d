#include "reference/gpu_dequantize.h"

#include "reference/fp4_codecs.h"

namespace fp4arena {
namespace gpu_dequantize {
namespace {

using cuda_util::CudaOk;

constexpr int kThreads = 256;

unsigned BlocksFor(size_t items) {
  const size_t wanted = (items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(wanted < 65536 ? (wanted > 0 ? wanted : 1) : 65536);
}

// The tables come from global memory and are staged in shared memory per block.
struct SharedTables {
  float e2m1[16];
  float e4m3[256];
};

__device__ void StageTables(const DecodeTables* __restrict__ tables, SharedTables* s) {
  for (int i = threadIdx.x; i < 256; i += blockDim.x) {
    s->e4m3[i] = tables->e4m3[i];
    if (i < 16) s->e2m1[i] = tables->e2m1[i];
  }
  __syncthreads();
}

// One thread per packed byte, two outputs each: the byte's two E2M1 codes times the scales
// `scales_of(t, i)` gives for its two elements.
template <class ScalesOf>
__device__ void DequantizeBytes(const uint8_t* __restrict__ packed, size_t bytes,
                                const DecodeTables* __restrict__ tables, ScalesOf scales_of,
                                float2* __restrict__ out) {
  __shared__ SharedTables t;
  StageTables(tables, &t);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < bytes;
       i += stride) {
    const float2 s = scales_of(t, i);
    const uint8_t b = packed[i];
    out[i] = make_float2(t.e2m1[b & 0xF] * s.x, t.e2m1[b >> 4] * s.y);
  }
}

// NVFP4: one E4M3 scale per 16-block, which spans 8 bytes.
struct E4m3BlockScales {
  const uint8_t* __restrict__ scales;
  __device__ float2 operator()(const SharedTables& t, size_t i) const {
    const float s = t.e4m3[scales[i / 8]];
    return make_float2(s, s);
  }
};

// FP16 group scales: the two elements of a byte may sit in different groups when group_size
// is odd, so each looks up its own scale.
struct HalfGroupScales {
  const __half* __restrict__ scales;
  size_t group_size;
  __device__ float2 operator()(const SharedTables&, size_t i) const {
    return make_float2(__half2float(scales[2 * i / group_size]),
                       __half2float(scales[(2 * i + 1) / group_size]));
  }
};

__global__ void DequantizeNvfp4Kernel(const uint8_t* __restrict__ packed,
                                      const uint8_t* __restrict__ scales, size_t bytes,
                                      const DecodeTables* __restrict__ tables,
                                      float2* __restrict__ out) {
  DequantizeBytes(packed, bytes, tables, E4m3BlockScales{scales}, out);
}

__global__ void DequantizeE2m1HalfScalesKernel(const uint8_t* __restrict__ packed,
                                               const __half* __restrict__ scales, size_t bytes,
                                               size_t group_size,
                                               const DecodeTables* __restrict__ tables,
                                               float2* __restrict__ out) {
  DequantizeBytes(packed, bytes, tables, HalfGroupScales{scales, group_size}, out);
}

__global__ void DecodeE4m3Kernel(const uint8_t* __restrict__ codes, size_t n,
                                 const DecodeTables* __restrict__ tables, float* __restrict__ out) {
  __shared__ SharedTables t;
  StageTables(tables, &t);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = t.e4m3[codes[i]];
  }
}

__global__ void HalfToFloatKernel(const __half* __restrict__ in, size_t n,
                                  float* __restrict__ out) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = __half2float(in[i]);
  }
}

}  // namespace

bool UploadDecodeTables(cuda_util::DeviceBuffer* d, std::string* err) {
  DecodeTables tables;
  for (int i = 0; i < 16; ++i) tables.e2m1[i] = e2m1_decode(static_cast<uint8_t>(i));
  for (int i = 0; i < 256; ++i) tables.e4m3[i] = e4m3_decode(static_cast<uint8_t>(i));
  return cuda_util::Upload(&tables, sizeof tables, d, "decode tables", err);
}

bool LaunchDequantizeNvfp4(const uint8_t* packed, const uint8_t* scales, size_t elements,
                           const DecodeTables* tables, float* out, std::string* err) {
  if (elements == 0) return true;
  const size_t bytes = elements / 2;
  DequantizeNvfp4Kernel<<<BlocksFor(bytes), kThreads>>>(packed, scales, bytes, tables,
                                                        reinterpret_cast<float2*>(out));
  return CudaOk(cudaGetLastError(), "DequantizeNvfp4Kernel launch", err);
}

bool LaunchDequantizeE2m1HalfScales(const uint8_t* packed, const __half* scales, size_t elements,
                                    size_t group_size, const DecodeTables* tables, float* out,
                                    std::string* err) {
  if (elements == 0) return true;
  const size_t bytes = elements / 2;
  DequantizeE2m1HalfScalesKernel<<<BlocksFor(bytes), kThreads>>>(
      packed, scales, bytes, group_size, tables, reinterpret_cast<float2*>(out));
  return CudaOk(cudaGetLastError(), "DequantizeE2m1HalfScalesKernel launch", err);
}

bool LaunchDecodeE4m3(const uint8_t* codes, size_t n, const DecodeTables* tables, float* out,
                      std::string* err) {
  if (n == 0) return true;
  DecodeE4m3Kernel<<<BlocksFor(n), kThreads>>>(codes, n, tables, out);
  return CudaOk(cudaGetLastError(), "DecodeE4m3Kernel launch", err);
}

bool LaunchHalfToFloat(const __half* in, size_t n, float* out, std::string* err) {
  if (n == 0) return true;
  HalfToFloatKernel<<<BlocksFor(n), kThreads>>>(in, n, out);
  return CudaOk(cudaGetLastError(), "HalfToFloatKernel launch", err);
}

}  // namespace gpu_dequantize
}  // namespace fp4arena
