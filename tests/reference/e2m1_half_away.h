// E2M1 rounding with ties away from zero instead of to even (saturating at 6, the sign
// kept): the careless quantizer the tests of the reference and of the quantize challenges
// expect the judge to reject on exact midpoints.
#pragma once

#include <cmath>
#include <cstdint>

namespace fp4arena::testing {

inline uint8_t E2m1HalfAway(float v) {
  const float mags[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float a = std::fabs(v);
  int mag = 7;
  for (int m = 0; m < 7; ++m) {
    if (a < 0.5f * (mags[m] + mags[m + 1])) {
      mag = m;
      break;
    }
  }
  return static_cast<uint8_t>((std::signbit(v) ? 8 : 0) | mag);
}

}  // namespace fp4arena::testing
