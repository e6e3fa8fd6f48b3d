#include "reference/fp4_codecs.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "tests/reference/golden_cases.h"

namespace fp4arena {
namespace {

uint32_t Bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(E2m1, DecodeMatchesDataFileBitForBit) {
  std::string err;
  const nlohmann::json j = testing::LoadJson("tests/data/fp4_codecs.json", &err);
  ASSERT_FALSE(j.is_null()) << err;
  const nlohmann::json& table = j.at("e2m1");
  ASSERT_EQ(table.size(), 16u);
  for (int code = 0; code < 16; ++code) {
    const float want = static_cast<float>(testing::JsonToDouble(table[code]));
    EXPECT_EQ(Bits(e2m1_decode(static_cast<uint8_t>(code))), Bits(want)) << "code " << code;
  }
  EXPECT_TRUE(std::signbit(e2m1_decode(8)));
  // Only the low nibble counts.
  EXPECT_EQ(e2m1_decode(0xF7), 6.0f);
}

TEST(E4m3, DecodeMatchesDataFileBitForBit) {
  std::string err;
  const nlohmann::json j = testing::LoadJson("tests/data/fp4_codecs.json", &err);
  ASSERT_FALSE(j.is_null()) << err;
  const nlohmann::json& table = j.at("e4m3fn");
  ASSERT_EQ(table.size(), 256u);
  for (int code = 0; code < 256; ++code) {
    const float got = e4m3_decode(static_cast<uint8_t>(code));
    const std::string text = table[code].get<std::string>();
    if (text == "nan") {
      EXPECT_TRUE(std::isnan(got)) << "code " << code;
      EXPECT_TRUE(e4m3_is_nan(static_cast<uint8_t>(code)));
      continue;
    }
    EXPECT_FALSE(e4m3_is_nan(static_cast<uint8_t>(code))) << "code " << code;
    const float want = static_cast<float>(std::strtod(text.c_str(), nullptr));
    EXPECT_EQ(Bits(got), Bits(want)) << "code " << code << " want " << text;
  }
}

TEST(E4m3, DecodeFormatFacts) {
  EXPECT_EQ(e4m3_decode(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(e4m3_decode(0x07), 7 * std::ldexp(1.0f, -9));
  EXPECT_EQ(e4m3_decode(0x08), std::ldexp(1.0f, -6));
  EXPECT_EQ(e4m3_decode(0x38), 1.0f);
  EXPECT_EQ(e4m3_decode(0x7E), 448.0f);
  EXPECT_EQ(e4m3_decode(0xFE), -448.0f);
  EXPECT_TRUE(std::isnan(e4m3_decode(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3_decode(0xFF)));
  EXPECT_EQ(Bits(e4m3_decode(0x80)), Bits(-0.0f));
}

TEST(E2m1, EncodeRoundTripsEveryCode) {
  for (int code = 0; code < 16; ++code) {
    EXPECT_EQ(e2m1_encode_rne(e2m1_decode(static_cast<uint8_t>(code))), code) << code;
  }
}

TEST(E2m1, EncodeRoundsToNearestEven) {
  // Midpoints go to the even code (mantissa bit 0).
  EXPECT_EQ(e2m1_encode_rne(0.25f), 0);   // 0 | 0.5
  EXPECT_EQ(e2m1_encode_rne(0.75f), 2);   // 0.5 | 1 -> 1
  EXPECT_EQ(e2m1_encode_rne(1.25f), 2);   // 1 | 1.5 -> 1
  EXPECT_EQ(e2m1_encode_rne(1.75f), 4);   // 1.5 | 2 -> 2
  EXPECT_EQ(e2m1_encode_rne(2.5f), 4);    // 2 | 3 -> 2
  EXPECT_EQ(e2m1_encode_rne(3.5f), 6);    // 3 | 4 -> 4
  EXPECT_EQ(e2m1_encode_rne(5.0f), 6);    // 4 | 6 -> 4
  EXPECT_EQ(e2m1_encode_rne(-2.5f), 12);  // -2
  EXPECT_EQ(e2m1_encode_rne(-5.0f), 14);  // -4
  // Just off the midpoints.
  EXPECT_EQ(e2m1_encode_rne(std::nextafter(0.25f, 1.0f)), 1);
  EXPECT_EQ(e2m1_encode_rne(std::nextafter(0.75f, 0.0f)), 1);
  EXPECT_EQ(e2m1_encode_rne(std::nextafter(2.5f, 3.0f)), 5);
  EXPECT_EQ(e2m1_encode_rne(std::nextafter(5.0f, 6.0f)), 7);
  EXPECT_EQ(e2m1_encode_rne(std::nextafter(3.5f, 0.0f)), 5);
  EXPECT_EQ(e2m1_encode_rne(0.1f), 0);
  EXPECT_EQ(e2m1_encode_rne(2.2f), 4);
  EXPECT_EQ(e2m1_encode_rne(4.9f), 6);
}

TEST(E2m1, EncodeSaturatesAndHandlesSpecials) {
  EXPECT_EQ(e2m1_encode_rne(6.5f), 7);
  EXPECT_EQ(e2m1_encode_rne(1e30f), 7);
  EXPECT_EQ(e2m1_encode_rne(kInf), 7);
  EXPECT_EQ(e2m1_encode_rne(-7.0f), 15);
  EXPECT_EQ(e2m1_encode_rne(-kInf), 15);
  EXPECT_EQ(e2m1_encode_rne(kNaN), 0);
  EXPECT_EQ(e2m1_encode_rne(-kNaN), 0);
  EXPECT_EQ(e2m1_encode_rne(0.0f), 0);
  EXPECT_EQ(e2m1_encode_rne(-0.0f), 8);
  EXPECT_EQ(e2m1_encode_rne(-0.1f), 8);  // rounds to -0: the sign survives
}

TEST(E2m1, EncodeIsNearestForADenseSweep) {
  for (float x = -8.0f; x <= 8.0f; x += 1.0f / 1024) {
    const float got = e2m1_decode(e2m1_encode_rne(x));
    float best = kInf;
    for (int code = 0; code < 16; ++code) {
      best = std::fmin(best, std::fabs(e2m1_decode(static_cast<uint8_t>(code)) -
                                       std::fmax(std::fmin(x, 6.0f), -6.0f)));
    }
    EXPECT_EQ(std::fabs(got - std::fmax(std::fmin(x, 6.0f), -6.0f)), best) << x;
  }
}

TEST(E4m3, EncodeRoundTripsEveryFiniteCode) {
  for (int code = 0; code < 256; ++code) {
    if (e4m3_is_nan(static_cast<uint8_t>(code))) continue;
    EXPECT_EQ(e4m3_encode_rne(e4m3_decode(static_cast<uint8_t>(code))), code) << code;
  }
}

TEST(E4m3, EncodeRoundsMidpointsToEven) {
  // Between every pair of neighbouring positive codes c, c+1: the midpoint goes to the even
  // code, anything just below to c, just above to c+1. Covers subnormals and the
  // subnormal/normal and binade boundaries.
  for (int code = 0; code < 0x7E; ++code) {
    const float lo = e4m3_decode(static_cast<uint8_t>(code));
    const float hi = e4m3_decode(static_cast<uint8_t>(code + 1));
    const float mid = 0.5f * (lo + hi);  // exact in float
    const int even = (code % 2 == 0) ? code : code + 1;
    EXPECT_EQ(e4m3_encode_rne(mid), even) << "midpoint of " << code;
    EXPECT_EQ(e4m3_encode_rne(-mid), even | 0x80) << "midpoint of -" << code;
    EXPECT_EQ(e4m3_encode_rne(std::nextafter(mid, 0.0f)), code) << code;
    EXPECT_EQ(e4m3_encode_rne(std::nextafter(mid, 1000.0f)), code + 1) << code;
  }
}

TEST(E4m3, EncodeKnownValues) {
  EXPECT_EQ(e4m3_encode_rne(std::ldexp(1.0f, -10)), 0x00);      // half of 2^-9: tie -> 0
  EXPECT_EQ(e4m3_encode_rne(3 * std::ldexp(1.0f, -10)), 0x02);  // 1.5 quanta -> 2
  EXPECT_EQ(e4m3_encode_rne(std::ldexp(1.0f, -12)), 0x00);      // underflow to +0
  EXPECT_EQ(e4m3_encode_rne(-std::ldexp(1.0f, -12)), 0x80);     // underflow to -0
  EXPECT_EQ(e4m3_encode_rne(std::ldexp(15.0f, -10)), 0x08);     // 7.5 quanta -> 8 = 2^-6
  EXPECT_EQ(e4m3_encode_rne(1.0f), 0x38);
  EXPECT_EQ(e4m3_encode_rne(1.0625f), 0x38);  // 1 | 1.125 -> 1
  EXPECT_EQ(e4m3_encode_rne(1.1875f), 0x3A);  // 1.125 | 1.25 -> 1.25
  EXPECT_EQ(e4m3_encode_rne(1.9375f), 0x40);  // 1.875 | 2 -> 2 (next binade)
  EXPECT_EQ(e4m3_encode_rne(0.3f), 0x2A);     // 0.3 -> 0.3125
}

TEST(E4m3, EncodeSaturatesAndHandlesSpecials) {
  EXPECT_EQ(e4m3_encode_rne(448.0f), 0x7E);
  EXPECT_EQ(e4m3_encode_rne(449.0f), 0x7E);
  EXPECT_EQ(e4m3_encode_rne(464.0f), 0x7E);  // would be the 448 | 480 midpoint
  EXPECT_EQ(e4m3_encode_rne(500.0f), 0x7E);
  EXPECT_EQ(e4m3_encode_rne(1e30f), 0x7E);
  EXPECT_EQ(e4m3_encode_rne(kInf), 0x7E);
  EXPECT_EQ(e4m3_encode_rne(-464.0f), 0xFE);
  EXPECT_EQ(e4m3_encode_rne(-kInf), 0xFE);
  EXPECT_EQ(e4m3_encode_rne(kNaN), 0x7F);
  EXPECT_EQ(e4m3_encode_rne(-kNaN), 0x7F);
  EXPECT_EQ(e4m3_encode_rne(0.0f), 0x00);
  EXPECT_EQ(e4m3_encode_rne(-0.0f), 0x80);
  EXPECT_EQ(e4m3_encode_rne(std::numeric_limits<float>::denorm_min()), 0x00);
}

TEST(E4m3, EncodeIsNearestForADenseSweep) {
  // Every float in a log-spaced sweep encodes to a code whose value is as close as any.
  for (float x = 1e-4f; x < 448.0f; x *= 1.0009f) {
    const float got = e4m3_decode(e4m3_encode_rne(x));
    float best = kInf;
    for (int code = 0; code <= 0x7E; ++code) {
      best = std::fmin(best, std::fabs(e4m3_decode(static_cast<uint8_t>(code)) - x));
    }
    EXPECT_EQ(std::fabs(got - x), best) << x;
  }
}

TEST(E8m0Codec, DecodeFormatFacts) {
  // value 2^(code - 127); OCP MX v1.0 E8M0: no zero, no sign, 0xFF is NaN.
  EXPECT_EQ(e8m0_decode(127), 1.0f);
  EXPECT_EQ(e8m0_decode(128), 2.0f);
  EXPECT_EQ(e8m0_decode(126), 0.5f);
  EXPECT_EQ(e8m0_decode(254), std::ldexp(1.0f, 127));
  EXPECT_EQ(e8m0_decode(1), std::ldexp(1.0f, -126));
  EXPECT_EQ(Bits(e8m0_decode(0)), 0x00400000u);  // 2^-127, an FP32 subnormal
  EXPECT_TRUE(std::isnan(e8m0_decode(255)));
  EXPECT_TRUE(e8m0_is_nan(255));
  EXPECT_FALSE(e8m0_is_nan(254));
  for (int code = 0; code < 255; ++code) {
    EXPECT_EQ(e8m0_decode(static_cast<uint8_t>(code)), std::ldexp(1.0f, code - 127)) << code;
  }
}

TEST(E8m0Codec, EncodeRoundUpIsSmallestPowerOfTwoAtOrAbove) {
  // Powers of two encode exactly; anything above goes to the next one.
  for (int code = 1; code < 255; ++code) {
    const float p = e8m0_decode(static_cast<uint8_t>(code));
    EXPECT_EQ(e8m0_encode_round_up(p), code) << code;
    if (code < 254) {
      EXPECT_EQ(e8m0_encode_round_up(std::nextafter(p, kInf)), code + 1) << code;
    }
    EXPECT_EQ(e8m0_encode_round_up(std::nextafter(p, 0.0f)), code) << code;
  }
  EXPECT_EQ(e8m0_encode_round_up(1.0f), 127);
  EXPECT_EQ(e8m0_encode_round_up(1.5f), 128);   // 2
  EXPECT_EQ(e8m0_encode_round_up(0.75f), 127);  // 1
  EXPECT_EQ(e8m0_encode_round_up(-3.0f), 129);  // |x| = 3 -> 4
  // fouroversix's bit rule: every FP32 subnormal gives code 1 (2^-126), +0 gives code 0.
  EXPECT_EQ(e8m0_encode_round_up(std::ldexp(1.0f, -127)), 1);
  EXPECT_EQ(e8m0_encode_round_up(std::ldexp(1.0f, -149)), 1);
  EXPECT_EQ(e8m0_encode_round_up(0.0f), 0);
  // Above 2^127 there is no power of two left: NaN code, as for NaN and infinity.
  EXPECT_EQ(e8m0_encode_round_up(std::nextafter(std::ldexp(1.0f, 127), kInf)), 0xFF);
  EXPECT_EQ(e8m0_encode_round_up(kInf), 0xFF);
  EXPECT_EQ(e8m0_encode_round_up(kNaN), 0xFF);
}

}  // namespace
}  // namespace fp4arena
