// FP4 (E2M1), FP8 (E4M3, the "fn" variant) and E8M0 (the MX scale) codecs: the one place in
// fp4arena where these bit formats are decoded and encoded. Everything else calls these
// functions.
#pragma once

#include <cmath>
#include <cstdint>

namespace fp4arena {

/// Decodes the low 4 bits of `code` as E2M1: sign<<3 | exp<<1 | mantissa.
/// Codes 0..7 are 0, 0.5, 1, 1.5, 2, 3, 4, 6; codes 8..15 their negatives (8 is -0.0).
/// Inline, one table lookup: the rule-1 oracle decodes every element of every candidate
/// (a branch on a random sign bit mispredicts half the time).
inline float e2m1_decode(uint8_t code) {
  static constexpr float kValues[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                        -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  return kValues[code & 0xF];
}

/// Encodes `x` as E2M1 with round-to-nearest-even. Magnitudes above 6 saturate to +-6
/// (also +-inf); NaN encodes as +0 (E2M1 has no NaN); -0.0 encodes as 8. Inline: the
/// quantizers' oracle calls it for every element of sets of tens of millions.
inline uint8_t e2m1_encode_rne(float x) {
  const float a = std::fabs(x);
  // Without a branch, so that a loop of calls vectorises: a NaN fails every comparison
  // below (magnitude code 0) and drops its sign (a == a only fails for NaN).
  const uint8_t sign = static_cast<uint8_t>((std::signbit(x) & (a == a)) << 3);
  // Decision points are the midpoints between neighbouring magnitudes; at a tie the even
  // code (mantissa bit 0) wins, which is why the comparison alternates between > and >=:
  // ties 0|0.5 -> 0, 0.5|1 -> 1, 1|1.5 -> 1, 1.5|2 -> 2, 2|3 -> 2, 3|4 -> 4, 4|6 -> 4.
  // Above 5 the code is 7 (6), saturating (infinities included). The magnitude code is the
  // number of decision points passed, counted without branches (random data mispredicts a
  // chain of them).
  const uint8_t mag = static_cast<uint8_t>((a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) +
                                           (a > 2.5f) + (a >= 3.5f) + (a > 5.0f));
  return sign | mag;
}

/// Decodes float8_e4m3fn bits: bias 7, subnormals (0x01 = 2^-9), max finite 448,
/// 0x7F and 0xFF are NaN, there is no infinity.
float e4m3_decode(uint8_t code);

/// Encodes `x` as float8_e4m3fn with round-to-nearest-even, saturating: finite magnitudes
/// above 448 (and infinities) give +-448 (0x7E / 0xFE); NaN gives 0x7F.
uint8_t e4m3_encode_rne(float x);

/// True when `code` is one of the two float8_e4m3fn NaN codes.
inline bool e4m3_is_nan(uint8_t code) {
  return (code & 0x7F) == 0x7F;
}

/// Decodes an E8M0 scale (OCP MX v1.0): an unsigned biased exponent, value 2^(code - 127);
/// code 0 is 2^-127 (an FP32 subnormal), 254 is 2^127, 0xFF is NaN. There is no zero, sign
/// or infinity.
float e8m0_decode(uint8_t code);

/// Encodes a non-negative `x` as the E8M0 scale of the smallest power of two >= x, the way
/// fouroversix's MX quantizer does it on the FP32 bits (src/fouroversix/quantize/pytorch/
/// reference.py, quantize_to_mxfp4): take the biased exponent field of x and add one when
/// any mantissa bit is set. That is exactly "smallest 2^k >= x" for normal x; any positive
/// FP32 subnormal gives code 1 (2^-126); +0 gives code 0; NaN, infinities and values whose
/// round-up would pass 2^127 give 0xFF. The sign bit is ignored (|x| is encoded).
uint8_t e8m0_encode_round_up(float x);

/// True when `code` is the E8M0 NaN code.
inline bool e8m0_is_nan(uint8_t code) {
  return code == 0xFF;
}

}  // namespace fp4arena
