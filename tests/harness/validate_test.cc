#include "harness/validate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace fp4arena {
namespace {

const Tolerance kTol{0.1, 0.05};

uint16_t half_bits(float f) {
  // Test helper for values exactly representable in half.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if (half_bits_to_float(uint16_t(h)) == f &&
        std::signbit(half_bits_to_float(uint16_t(h))) == std::signbit(f)) {
      return uint16_t(h);
    }
  }
  ADD_FAILURE() << f << " is not a half value";
  return 0;
}

TEST(Tolerance, BoundaryIsInclusive) {
  EXPECT_TRUE(within_tolerance(10.6, 10.0, kTol));  // 0.1 + 0.05*10 = 0.6
  EXPECT_FALSE(within_tolerance(10.6001, 10.0, kTol));
  EXPECT_TRUE(within_tolerance(9.4, 10.0, kTol));
  EXPECT_TRUE(within_tolerance(-0.1, 0.0, kTol));
  EXPECT_FALSE(within_tolerance(-0.10001, 0.0, kTol));
}

TEST(Tolerance, NanAndInfNeverPass) {
  double inf = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(within_tolerance(std::nan(""), 1.0, kTol));
  EXPECT_FALSE(within_tolerance(inf, 1e300, kTol));
  EXPECT_FALSE(within_tolerance(-inf, -inf, kTol));
  EXPECT_FALSE(within_tolerance(1.0, std::nan(""), kTol));
}

TEST(Tolerance, SignedZeroesAreEqual) {
  EXPECT_TRUE(within_tolerance(-0.0, 0.0, kTol));
  EXPECT_TRUE(within_tolerance(0.0, -0.0, Tolerance{0, 0}));
}

TEST(HalfBits, DecodesEveryClassExactly) {
  EXPECT_EQ(half_bits_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_bits_to_float(0xC000), -2.0f);
  EXPECT_EQ(half_bits_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(half_bits_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_bits_to_float(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_TRUE(std::signbit(half_bits_to_float(0x8000)));
  EXPECT_TRUE(std::isinf(half_bits_to_float(0x7C00)));
  EXPECT_TRUE(std::isnan(half_bits_to_float(0x7E00)));
  EXPECT_TRUE(std::isnan(half_bits_to_float(kHalfPoison)));
}

TEST(Validate, PassingOutput) {
  std::vector<float> ref = {1.0f, -2.0f, 0.0f, 100.0f};
  std::vector<uint16_t> out = {half_bits(1.0f), half_bits(-2.0f), half_bits(-0.0f),
                               half_bits(104.0f)};
  ValidationResult r = validate_output(out.data(), "__half", ref, 2, 2, kTol);
  EXPECT_TRUE(r.passed) << r.summary;
  EXPECT_EQ(r.mismatches, 0);
  EXPECT_DOUBLE_EQ(r.max_abs_err, 4.0);
  EXPECT_TRUE(r.tile_map.empty());
}

TEST(Validate, ReportsWorstElementsUnwrittenAndNonFinite) {
  const int rows = 40, cols = 100;
  std::vector<float> ref(rows * cols, 1.0f);
  std::vector<uint16_t> out(rows * cols, half_bits(1.0f));
  out[5 * cols + 7] = half_bits(3.0f);     // off by 2 (excess 2/0.15)
  out[39 * cols + 99] = kHalfPoison;       // never written
  out[10 * cols + 50] = 0x7C00;            // +inf
  out[20 * cols + 20] = half_bits(1.25f);  // off by 0.25: excess 1.67
  ValidationResult r = validate_output(out.data(), "__half", ref, rows, cols, kTol);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 4);
  EXPECT_EQ(r.unwritten, 1);
  EXPECT_EQ(r.nonfinite, 1);
  ASSERT_EQ(r.worst.size(), 4u);
  // Non-finite first (infinite excess), then by excess.
  EXPECT_TRUE(std::isinf(r.worst[0].excess));
  EXPECT_EQ(r.worst[2].row, 5);
  EXPECT_EQ(r.worst[2].col, 7);
  EXPECT_EQ(r.worst[3].row, 20);
  EXPECT_NE(r.summary.find("4 of 4000 elements"), std::string::npos) << r.summary;
  EXPECT_NE(r.summary.find("1 never written"), std::string::npos) << r.summary;
  EXPECT_NE(r.tile_map.find('x'), std::string::npos);
}

TEST(Validate, TileMapShowsALastColumnBug) {
  const int rows = 64, cols = 64;
  std::vector<float> ref(rows * cols, 2.0f);
  std::vector<uint16_t> out(rows * cols, half_bits(2.0f));
  for (int r = 0; r < rows; ++r) out[r * cols + cols - 1] = half_bits(0.0f);
  ValidationResult r = validate_output(out.data(), "__half", ref, rows, cols, kTol);
  EXPECT_EQ(r.mismatches, rows);
  // Every map row ends with '#' (the last column fails) and has '.' elsewhere.
  size_t start = r.tile_map.find('\n') + 1;
  int map_rows = 0;
  for (size_t pos = start; pos < r.tile_map.size();) {
    size_t end = r.tile_map.find('\n', pos);
    std::string line = r.tile_map.substr(pos, end - pos);
    EXPECT_EQ(line.back(), '#') << line;
    EXPECT_EQ(line.find('#'), line.size() - 1) << line;
    ++map_rows;
    pos = end + 1;
  }
  EXPECT_EQ(map_rows, 16);
}

TEST(Validate, FloatOutputs) {
  std::vector<float> ref = {1.0f, 2.0f};
  std::vector<float> out = {1.0f, std::nanf("")};
  ValidationResult r = validate_output(out.data(), "float", ref, 1, 2, kTol);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_EQ(r.nonfinite, 1);
}

}  // namespace
}  // namespace fp4arena
