#include "reference/nvfp4.h"

#include <cmath>
#include <cstddef>
#include <utility>

#include "reference/fp4_codecs.h"
#include "reference/fp4_quantize.h"

namespace fp4arena {

Nvfp4Tensor nvfp4_quantize(const float* x, int rows, int cols) {
  // The recipe lives once, in the reference quantizer (its rule 0); this keeps the codes,
  // scales and global scale and drops the tie information.
  Nvfp4Tensor t;
  QuantizedFp4 q =
      nvfp4_quantize_ref(x, rows, cols, kNvfp4RuleStatic6, 0, Fp4RefOutputs{false, false});
  if (q.rows == 0) return t;  // precondition violated: empty
  t.rows = q.rows;
  t.cols = q.cols;
  t.packed = std::move(q.packed);
  t.scales = std::move(q.scales);
  t.global_scale = q.global_scale;
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
