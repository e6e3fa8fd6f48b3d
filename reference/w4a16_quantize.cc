#include "reference/w4a16_quantize.h"

#include <algorithm>
#include <cmath>

#include "reference/fp4_codecs.h"

namespace fp4arena {

W4a16Weights w4a16_quantize(const float* w, int rows, int cols, int group_size) {
  W4a16Weights q;
  q.rows = rows;
  q.cols = cols;
  q.group_size = group_size;
  const int groups = cols / group_size;
  q.packed.assign(static_cast<size_t>(rows) * cols / 2, 0);
  q.scales.assign(static_cast<size_t>(rows) * groups, __float2half_rn(0.0f));
  for (int r = 0; r < rows; ++r) {
    const float* row = w + static_cast<size_t>(r) * cols;
    for (int g = 0; g < groups; ++g) {
      float gmax = 0.0f;
      for (int k = g * group_size; k < (g + 1) * group_size; ++k) {
        gmax = std::max(gmax, std::fabs(row[k]));
      }
      // __float2half_rn rounds values past 65520 to infinity; the scale saturates instead.
      float s = std::min(gmax / 6.0f, 65504.0f);
      __half scale = __float2half_rn(s);
      q.scales[static_cast<size_t>(r) * groups + g] = scale;
      const float sf = __half2float(scale);
      for (int k = g * group_size; k < (g + 1) * group_size; ++k) {
        uint8_t code = sf == 0.0f ? 0 : e2m1_encode_rne(row[k] / sf);
        q.packed[(static_cast<size_t>(r) * cols + k) / 2] |=
            static_cast<uint8_t>(code << (k % 2 ? 4 : 0));
      }
    }
  }
  return q;
}

float w4a16_element(const W4a16Weights& q, int r, int c) {
  const size_t i = static_cast<size_t>(r) * q.cols + c;
  const uint8_t byte = q.packed[i / 2];
  const uint8_t code = c % 2 ? byte >> 4 : byte & 0xF;
  const float s =
      __half2float(q.scales[static_cast<size_t>(r) * (q.cols / q.group_size) + c / q.group_size]);
  return e2m1_decode(code) * s;
}

}  // namespace fp4arena
