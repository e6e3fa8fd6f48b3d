// Device-side dequantization for the GPU oracles (internal to reference/): each launcher
// expands codes already in device memory into FP32 device memory on the default stream,
// checks the launch and does not synchronize. The E2M1 and E4M3 decode tables are filled on
// the host by reference/fp4_codecs, so the GPU reads those formats exactly as the CPU
// oracles do; FP16 is converted by CUDA's __half2float, exact like every FP16 -> FP32 cast.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_fp16.h>

#include "reference/cuda_util.h"

namespace fp4arena {
namespace gpu_dequantize {

struct DecodeTables {
  float e2m1[16];
  float e4m3[256];
};

/// Fills the tables from fp4_codecs and copies them into *d (one DecodeTables).
bool UploadDecodeTables(cuda_util::DeviceBuffer* d, std::string* err);

/// NVFP4: out[i] = e2m1(nibble i) * e4m3(scales[i / 16]) for i < elements (a multiple of
/// 16); element 2j is the low nibble of packed[j]. Rows that hold whole 16-blocks make this
/// the row-major [rows][K] layout of any NVFP4 tensor.
bool LaunchDequantizeNvfp4(const uint8_t* packed, const uint8_t* scales, size_t elements,
                           const DecodeTables* tables, float* out, std::string* err);

/// E2M1 with FP16 group scales: out[i] = e2m1(nibble i) * float(scales[i / group_size]) for
/// i < elements (even; group_size > 0 divides the row length, so the row-major [rows][K]
/// layout needs no row index).
bool LaunchDequantizeE2m1HalfScales(const uint8_t* packed, const __half* scales, size_t elements,
                                    size_t group_size, const DecodeTables* tables, float* out,
                                    std::string* err);

/// out[i] = e4m3(codes[i]) for i < n.
bool LaunchDecodeE4m3(const uint8_t* codes, size_t n, const DecodeTables* tables, float* out,
                      std::string* err);

/// out[i] = float(in[i]) for i < n.
bool LaunchHalfToFloat(const __half* in, size_t n, float* out, std::string* err);

}  // namespace gpu_dequantize
}  // namespace fp4arena
