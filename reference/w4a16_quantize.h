// The W4A16 weight quantizer (challenge w4a16_matmul): E2M1 codes with one FP16 scale per
// group of consecutive k in a row. Layout (the challenge's):
//   packed: uint8 [rows][cols/2]; element (r, 2j) is the LOW nibble of byte j,
//           element (r, 2j+1) the HIGH nibble.
//   scales: FP16 [rows][cols/group_size], row-major.
#pragma once

#include <cstdint>
#include <vector>

#include <cuda_fp16.h>

namespace fp4arena {

struct W4a16Weights {
  int rows = 0;
  int cols = 0;
  int group_size = 0;
  std::vector<uint8_t> packed;  ///< rows * cols / 2 bytes
  std::vector<__half> scales;   ///< rows * cols / group_size FP16 scales
};

/// Quantizes a row-major float matrix (finite values) group by group:
///   scale = fp16_rne(gmax / 6.0f)         gmax = max |w| over the group (FP32 division)
///   code  = e2m1_encode_rne(w / float(scale)), or code 0 where the scale is 0
/// (the FP32 quotient may exceed 6 by a rounding of the scale: e2m1 saturates it to 6).
/// `group_size` > 0 must divide `cols`, and `cols` must be even. gmax / 6 above FP16's
/// largest finite value saturates the scale to 65504.
W4a16Weights w4a16_quantize(const float* w, int rows, int cols, int group_size);

/// Dequantizes element (r, c): e2m1(code) * float(scale), exact in FP32.
float w4a16_element(const W4a16Weights& q, int r, int c);

}  // namespace fp4arena
