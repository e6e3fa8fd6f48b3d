#include "reference/nvfp4.h"

#include <cmath>
#include <cstddef>

#include "reference/fp4_codecs.h"

namespace fp4arena {

Nvfp4Tensor nvfp4_quantize(const float* x, int rows, int cols) {
  Nvfp4Tensor t;
  if (rows <= 0 || cols <= 0 || cols % 16 != 0) return t;  // precondition violated: empty
  t.rows = rows;
  t.cols = cols;
  const size_t count = static_cast<size_t>(rows) * cols;
  const size_t blocks = count / 16;
  t.packed.assign(count / 2, 0);
  t.scales.assign(blocks, 0);

  // A NaN or infinity anywhere makes the tensor amax non-finite, and the recipe then falls
  // back to a global scale of 1.
  float amax = 0.0f;
  bool finite = true;
  for (size_t i = 0; i < count; ++i) {
    const float a = std::fabs(x[i]);
    if (!std::isfinite(a)) {
      finite = false;
    } else if (a > amax) {
      amax = a;
    }
  }
  t.global_scale = (finite && amax > 0.0f) ? 448.0f * 6.0f / amax : 1.0f;

  for (size_t blk = 0; blk < blocks; ++blk) {
    const float* xb = x + blk * 16;
    // NaN elements are left out of the block amax (std::fmax ignores a NaN operand), so a
    // block scale is never the NaN code; infinities saturate the scale to 448.
    float bmax = 0.0f;
    for (int i = 0; i < 16; ++i) bmax = std::fmax(bmax, std::fabs(xb[i]));
    const uint8_t scale_code = e4m3_encode_rne(bmax / 6.0f * t.global_scale);
    t.scales[blk] = scale_code;
    const float scale = e4m3_decode(scale_code);
    uint8_t* out = t.packed.data() + blk * 8;
    for (int i = 0; i < 16; i += 2) {
      uint8_t lo = 0, hi = 0;
      if (scale != 0.0f) {
        lo = e2m1_encode_rne(xb[i] * t.global_scale / scale);
        hi = e2m1_encode_rne(xb[i + 1] * t.global_scale / scale);
      }
      out[i / 2] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
  return t;
}

float nvfp4_element(const uint8_t* packed, const uint8_t* scales, int cols, int r, int c) {
  const size_t row = static_cast<size_t>(r);
  const uint8_t byte = packed[row * (cols / 2) + c / 2];
  const uint8_t code = (c & 1) ? (byte >> 4) : (byte & 0xF);
  return e2m1_decode(code) * e4m3_decode(scales[row * (cols / 16) + c / 16]);
}

std::vector<float> nvfp4_dequantize(const uint8_t* packed, const uint8_t* scales, int rows,
                                    int cols) {
  if (rows <= 0 || cols <= 0) return {};
  const size_t count = static_cast<size_t>(rows) * cols;
  std::vector<float> out(count);
  float e2m1[16];
  for (int i = 0; i < 16; ++i) e2m1[i] = e2m1_decode(static_cast<uint8_t>(i));
  for (size_t blk = 0; blk < count / 16; ++blk) {
    const float s = e4m3_decode(scales[blk]);
    const uint8_t* in = packed + blk * 8;
    float* o = out.data() + blk * 16;
    for (int j = 0; j < 8; ++j) {
      o[2 * j] = e2m1[in[j] & 0xF] * s;
      o[2 * j + 1] = e2m1[in[j] >> 4] * s;
    }
  }
  return out;
}

}  // namespace fp4arena
