// NVFP4 tensors: packed E2M1 values with one E4M3 scale per 16 consecutive elements of a
// row, plus a per-tensor FP32 global scale. Layout (the challenge's, and CUTLASS's):
//   packed: uint8 [rows][cols/2]; element (r, 2j) is the LOW nibble of byte j,
//           element (r, 2j+1) the HIGH nibble.
//   scales: uint8 [rows][cols/16], row-major, raw float8_e4m3fn bits.
#pragma once

#include <cstdint>
#include <vector>

namespace fp4arena {

struct Nvfp4Tensor {
  int rows = 0;
  int cols = 0;                 ///< a multiple of 16
  std::vector<uint8_t> packed;  ///< rows * cols / 2 bytes
  std::vector<uint8_t> scales;  ///< rows * cols / 16 E4M3 codes
  float global_scale = 1.0f;    ///< x ~= deq(packed, scales) / global_scale
};

/// Quantizes a row-major float matrix by the standard NVFP4 recipe:
///   global_scale = 448 * 6 / amax(x)   (1 when amax is 0 or not finite);
///   block scale  = e4m3_encode_rne(block_amax / 6 * global_scale);
///   element      = e2m1_encode_rne(x * global_scale / e4m3_decode(block scale)),
///                  or code 0 where the decoded block scale is 0.
/// `cols` must be a positive multiple of 16. This is nvfp4_quantize_ref's rule 0
/// (reference/fp4_quantize.h) without the tie information.
Nvfp4Tensor nvfp4_quantize(const float* x, int rows, int cols);

/// Dequantizes element (r, c): e2m1(code) * e4m3(scale). The global scale is NOT applied.
float nvfp4_element(const uint8_t* packed, const uint8_t* scales, int cols, int r, int c);

/// Dequantizes a whole tensor to floats (row-major rows x cols), global scale NOT applied.
std::vector<float> nvfp4_dequantize(const uint8_t* packed, const uint8_t* scales, int rows,
                                    int cols);

}  // namespace fp4arena
