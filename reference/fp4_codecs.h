// FP4 (E2M1) and FP8 (E4M3, the "fn" variant) codecs: the one place in fp4arena where
// these bit formats are decoded and encoded. Everything else calls these functions.
#pragma once

#include <cstdint>

namespace fp4arena {

/// Decodes the low 4 bits of `code` as E2M1: sign<<3 | exp<<1 | mantissa.
/// Codes 0..7 are 0, 0.5, 1, 1.5, 2, 3, 4, 6; codes 8..15 their negatives (8 is -0.0).
float e2m1_decode(uint8_t code);

/// Encodes `x` as E2M1 with round-to-nearest-even. Magnitudes above 6 saturate to +-6
/// (also +-inf); NaN encodes as +0 (E2M1 has no NaN); -0.0 encodes as 8.
uint8_t e2m1_encode_rne(float x);

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

}  // namespace fp4arena
