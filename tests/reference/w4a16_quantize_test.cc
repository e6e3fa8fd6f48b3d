// The W4A16 reference quantizer: scales are amax/6 in FP16, codes E2M1 round-to-nearest-even
// of w / scale, packed low nibble first.
#include "reference/w4a16_quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "harness/rng.h"
#include "reference/fp4_codecs.h"

namespace fp4arena {
namespace {

TEST(W4a16Quantize, HandWorkedGroup) {
  // One row, two groups of 2 (group_size 2 keeps it readable): [3, -1.5 | 0.75, 0].
  std::vector<float> w = {3.0f, -1.5f, 0.75f, 0.0f};
  W4a16Weights q = w4a16_quantize(w.data(), 1, 4, 2);
  ASSERT_EQ(q.scales.size(), 2u);
  EXPECT_EQ(__half2float(q.scales[0]), 0.5f);    // 3 / 6
  EXPECT_EQ(__half2float(q.scales[1]), 0.125f);  // 0.75 / 6
  // 3 / 0.5 = 6 (code 7), -1.5 / 0.5 = -3 (code 0xD); 0.75 / 0.125 = 6 (7), 0 (0).
  EXPECT_EQ(q.packed[0], 0xD7);
  EXPECT_EQ(q.packed[1], 0x07);
  EXPECT_EQ(w4a16_element(q, 0, 1), -1.5f);
}

TEST(W4a16Quantize, RoundsToNearestEvenAndZeroGroups) {
  // Group max 6 -> scale 1: 2.5 lies between 2 (code 4) and 3 (code 5): even mantissa, 2.
  // 0.25 lies between 0 and 0.5: ties to 0. 1.25 between 1 (code 2) and 1.5 (code 3): 1.
  std::vector<float> w = {6.0f, 2.5f, 0.25f, 1.25f, 0.0f, 0.0f, 0.0f, 0.0f};
  W4a16Weights q = w4a16_quantize(w.data(), 1, 8, 4);
  EXPECT_EQ(q.packed[0], 0x47);
  EXPECT_EQ(q.packed[1], 0x20);
  EXPECT_EQ(__half2float(q.scales[1]), 0.0f);
  EXPECT_EQ(q.packed[2], 0);
  EXPECT_EQ(q.packed[3], 0);
}

TEST(W4a16Quantize, ErrorBoundedByHalfAStepOfTheGroupScale) {
  const int rows = 7, cols = 256;
  for (int group : {32, 128}) {
    std::vector<float> w(rows * cols);
    for (int r = 0; r < rows; ++r) {
      Rng rng(5, 1, r);
      for (int k = 0; k < cols; ++k) w[r * cols + k] = float(std::ldexp(rng.normal(), r - 3));
    }
    W4a16Weights q = w4a16_quantize(w.data(), rows, cols, group);
    for (int r = 0; r < rows; ++r) {
      for (int k = 0; k < cols; ++k) {
        float s = __half2float(q.scales[r * (cols / group) + k / group]);
        // E2M1's widest step is 2 (4 -> 6), so the error is at most 1 scale unit, plus the
        // scale's own FP16 rounding (relative 2^-11 of up to 6 units).
        EXPECT_LE(std::fabs(w4a16_element(q, r, k) - w[r * cols + k]), s * 1.01f)
            << "group " << group << " r " << r << " k " << k;
      }
    }
  }
}

TEST(W4a16Quantize, SaturatesHugeGroupsToTheLargestHalf) {
  std::vector<float> w = {1e6f, -5e5f};
  W4a16Weights q = w4a16_quantize(w.data(), 1, 2, 2);
  EXPECT_EQ(__half2float(q.scales[0]), 65504.0f);
  EXPECT_EQ(q.packed[0] & 0xF, 7);  // 1e6 / 65504 = 15.3 saturates to 6
}

}  // namespace
}  // namespace fp4arena
