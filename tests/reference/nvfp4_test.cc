#include "reference/nvfp4.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "reference/fp4_codecs.h"

namespace fp4arena {
namespace {

uint8_t Nibble(const Nvfp4Tensor& t, int r, int c) {
  const uint8_t byte = t.packed[static_cast<size_t>(r) * t.cols / 2 + c / 2];
  return (c & 1) ? byte >> 4 : byte & 0xF;
}

TEST(Nvfp4Quantize, KnownBlock) {
  // amax 6: global scale 448 * 6 / 6 = 448, block scale 6 / 6 * 448 = 448 (code 0x7E), and
  // every element x maps to e2m1(x * 448 / 448) = e2m1(x).
  const std::vector<float> x = {6,    -3,   0.5f, 1,     -0.25f, 2.5f,   5,    -6,
                                1.5f, 0.7f, 0,    -0.0f, 4,      -1.75f, 3.5f, 0.1f};
  const Nvfp4Tensor t = nvfp4_quantize(x.data(), 1, 16);
  ASSERT_EQ(t.rows, 1);
  ASSERT_EQ(t.cols, 16);
  ASSERT_EQ(t.packed.size(), 8u);
  ASSERT_EQ(t.scales.size(), 1u);
  EXPECT_EQ(t.global_scale, 448.0f);
  EXPECT_EQ(t.scales[0], 0x7E);
  const uint8_t want[16] = {7, 13, 1, 2, 8, 4, 6, 15, 3, 1, 0, 8, 6, 12, 6, 0};
  for (int c = 0; c < 16; ++c) EXPECT_EQ(Nibble(t, 0, c), want[c]) << "element " << c;
  // Nibble order: element 0 (6 -> 7) low, element 1 (-3 -> 13) high.
  EXPECT_EQ(t.packed[0], 0xD7);
}

TEST(Nvfp4Quantize, KnownScaledBlocks) {
  // Two rows of 32; amax 12 gives global scale 2688 / 12 = 224.
  std::vector<float> x(64, 0.0f);
  x[0] = 12;
  x[1] = -3;
  x[16] = 1;
  x[17] = -0.5f;
  x[32 + 5] = 0.001f;
  const Nvfp4Tensor t = nvfp4_quantize(x.data(), 2, 32);
  EXPECT_EQ(t.global_scale, 224.0f);
  ASSERT_EQ(t.scales.size(), 4u);
  // Row 0, block 0: scale 12 / 6 * 224 = 448; 12 -> 6 (code 7), -3 -> -1.5 (code 11).
  EXPECT_EQ(t.scales[0], 0x7E);
  EXPECT_EQ(Nibble(t, 0, 0), 7);
  EXPECT_EQ(Nibble(t, 0, 1), 11);
  // Row 0, block 1: scale 1 / 6 * 224 = 37.33 -> 36 (code 0x61, 2^5 * 1.125);
  // 1 -> 224 / 36 = 6.22 -> 6 (code 7), -0.5 -> -3.11 -> -3 (code 13).
  EXPECT_EQ(t.scales[1], 0x61);
  EXPECT_EQ(Nibble(t, 0, 16), 7);
  EXPECT_EQ(Nibble(t, 0, 17), 13);
  // Row 1, block 0: scale 0.001 / 6 * 224 = 0.0373 -> 0.0390625 (code 0x12, 2^-5 * 1.25);
  // 0.001 -> 0.224 / 0.0390625 = 5.73 -> 6 (code 7).
  EXPECT_EQ(t.scales[2], 0x12);
  EXPECT_EQ(Nibble(t, 1, 5), 7);
  // Row 1, block 1: all zero, so scale code 0 and element codes 0.
  EXPECT_EQ(t.scales[3], 0x00);
  for (int c = 16; c < 32; ++c) EXPECT_EQ(Nibble(t, 1, c), 0);
}

TEST(Nvfp4Quantize, AllZeroTensor) {
  const std::vector<float> x(48, 0.0f);
  const Nvfp4Tensor t = nvfp4_quantize(x.data(), 1, 48);
  EXPECT_EQ(t.global_scale, 1.0f);
  for (uint8_t s : t.scales) EXPECT_EQ(s, 0);
  for (uint8_t b : t.packed) EXPECT_EQ(b, 0);
  for (float v : nvfp4_dequantize(t.packed.data(), t.scales.data(), 1, 48)) EXPECT_EQ(v, 0.0f);
}

TEST(Nvfp4Quantize, NonFiniteInputs) {
  std::vector<float> x(32, 1.0f);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[20] = std::numeric_limits<float>::infinity();
  const Nvfp4Tensor t = nvfp4_quantize(x.data(), 1, 32);
  EXPECT_EQ(t.global_scale, 1.0f);  // amax not finite
  for (uint8_t s : t.scales) EXPECT_FALSE(e4m3_is_nan(s));
  EXPECT_EQ(Nibble(t, 0, 3), 0);   // NaN -> +0
  EXPECT_EQ(t.scales[1], 0x7E);    // inf block saturates the scale
  EXPECT_EQ(Nibble(t, 0, 20), 7);  // inf / 448 -> +6
}

// Random tensors with a wide dynamic range: scale codes are never NaN, and every element is
// within the format's rounding error of its input.
TEST(Nvfp4Quantize, RoundTripErrorBound) {
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> log_mag(-8.0f, 8.0f);
  const int rows = 37, cols = 160;
  std::vector<float> x(static_cast<size_t>(rows) * cols);
  for (size_t blk = 0; blk < x.size() / 16; ++blk) {
    const float block_mag = std::exp2(log_mag(rng));
    for (int i = 0; i < 16; ++i) x[blk * 16 + i] = normal(rng) * block_mag;
  }
  const Nvfp4Tensor t = nvfp4_quantize(x.data(), rows, cols);
  ASSERT_EQ(t.packed.size(), x.size() / 2);
  ASSERT_EQ(t.scales.size(), x.size() / 16);
  for (uint8_t s : t.scales) EXPECT_FALSE(e4m3_is_nan(s));
  const std::vector<float> deq = nvfp4_dequantize(t.packed.data(), t.scales.data(), rows, cols);
  ASSERT_EQ(deq.size(), x.size());
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r) * cols + c;
      EXPECT_EQ(deq[i], nvfp4_element(t.packed.data(), t.scales.data(), cols, r, c));
    }
  }
  for (size_t blk = 0; blk < x.size() / 16; ++blk) {
    float bmax = 0.0f;
    for (int i = 0; i < 16; ++i) bmax = std::fmax(bmax, std::fabs(x[blk * 16 + i]));
    const float scale = e4m3_decode(t.scales[blk]);
    // The block scale, in input units, is within E4M3 relative rounding (2^-4) of bmax / 6
    // unless it is subnormal, in which case its absolute error is at most half of 2^-9.
    const double ideal = bmax / 6.0 * t.global_scale;
    ASSERT_GT(scale, 0.0f) << "block " << blk << ": the data should never need a zero scale";
    EXPECT_LE(std::fabs(scale - ideal), std::fmax(ideal * 0x1p-4, 0x1p-10) * 1.0001)
        << "block " << blk;
    for (int i = 0; i < 16; ++i) {
      const double v = x[blk * 16 + i];
      const double got = static_cast<double>(deq[blk * 16 + i]) / t.global_scale;
      // An element is v * g / scale in E2M1 units: within 6 * (1 + 2^-4) after saturation,
      // rounded with error at most half a unit of the binade (1 at the top, 0.25 at the
      // bottom) — so in input units at most 1 * scale / g, plus the saturation overshoot.
      const double scaled = v * t.global_scale / scale;
      const double sat_excess = std::fmax(std::fabs(scaled) - 6.0, 0.0);
      const double bound = (1.0 + sat_excess) * scale / t.global_scale;
      EXPECT_LE(std::fabs(got - v), bound * 1.0001) << "element " << blk * 16 + i;
    }
  }
}

TEST(Nvfp4Dequantize, NibbleOrderAndScales) {
  // Row 0: byte 0 = 0x21 -> element 0 code 1 (0.5), element 1 code 2 (1.0); scale 2.0.
  // Row 1: byte 8 = 0xF7 -> element 0 code 7 (6), element 1 code 15 (-6); scale 0.5.
  std::vector<uint8_t> packed(16, 0);
  packed[0] = 0x21;
  packed[8] = 0xF7;
  const std::vector<uint8_t> scales = {0x40, 0x30};  // 2.0, 0.5
  const std::vector<float> d = nvfp4_dequantize(packed.data(), scales.data(), 2, 16);
  ASSERT_EQ(d.size(), 32u);
  EXPECT_EQ(d[0], 1.0f);
  EXPECT_EQ(d[1], 2.0f);
  EXPECT_EQ(d[16], 3.0f);
  EXPECT_EQ(d[17], -3.0f);
  EXPECT_EQ(nvfp4_element(packed.data(), scales.data(), 16, 0, 0), 1.0f);
  EXPECT_EQ(nvfp4_element(packed.data(), scales.data(), 16, 1, 1), -3.0f);
}

TEST(Nvfp4Quantize, PacksElementZeroInLowNibble) {
  std::vector<float> x(16, 0.0f);
  x[0] = 6.0f;  // code 7 in the low nibble of byte 0
  x[3] = -1.0f;
  const Nvfp4Tensor t = nvfp4_quantize(x.data(), 1, 16);
  EXPECT_EQ(t.packed[0], 0x07);
  EXPECT_EQ(t.packed[1], 0xA0);  // element 3 = -1 (code 10) in the high nibble of byte 1
}

}  // namespace
}  // namespace fp4arena
