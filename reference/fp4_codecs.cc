#include "reference/fp4_codecs.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace fp4arena {
namespace {

// Round-half-to-even of a non-negative float that is small enough (< 2^23) for the floor to
// be exact. Written out instead of std::nearbyint so the result never depends on the
// thread's floating-point rounding mode. For q >= 0 the conversion's truncation is the floor.
int RoundHalfEven(float q) {
  int n = static_cast<int>(q);
  const float frac = q - static_cast<float>(n);  // exact: q and n share an exponent range
  if (frac > 0.5f || (frac == 0.5f && (n & 1) != 0)) ++n;
  return n;
}

}  // namespace

namespace {

float E4m3DecodeSlow(uint8_t code) {
  if (e4m3_is_nan(code)) return std::numeric_limits<float>::quiet_NaN();
  const int exp = (code >> 3) & 0xF;
  const int man = code & 0x7;
  const float mag = exp == 0 ? std::ldexp(static_cast<float>(man), -9)
                             : std::ldexp(static_cast<float>(8 + man), exp - 10);
  return (code & 0x80) ? -mag : mag;
}

// All 256 decoded values: the quantizers decode a scale per block and per candidate.
struct E4m3Table {
  float v[256];
  E4m3Table() {
    for (int c = 0; c < 256; ++c) v[c] = E4m3DecodeSlow(static_cast<uint8_t>(c));
  }
};

}  // namespace

float e4m3_decode(uint8_t code) {
  static const E4m3Table table;  // built on first use, whatever the static initialisation order
  return table.v[code];
}

uint8_t e4m3_encode_rne(float x) {
  if (std::isnan(x)) return 0x7F;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const float a = std::fabs(x);
  if (a >= 448.0f) return sign | 0x7E;  // saturating, also for infinities
  if (a < 0x1p-6f) {
    // Subnormal range, quantum 2^-9. A count of 8 quanta is exactly code 0x08 (2^-6), so
    // rounding up into the first normal binade needs no special case.
    return sign | static_cast<uint8_t>(RoundHalfEven(a * 512.0f));
  }
  // A normal float in [2^-6, 448): its exponent e in [-6, 8] and 23 mantissa bits, of which
  // E4M3 keeps 3, rounded half to even on the 20 below. A carry out of the 3 bits moves into
  // the exponent field by itself (mantissa 7 + 1 is the next binade's 0); a < 448 keeps the
  // code at or below 0x7E.
  uint32_t bits;
  std::memcpy(&bits, &a, sizeof bits);
  const uint32_t e = (bits >> 23) - 127;
  const uint32_t kept = (bits >> 20) & 0x7u, rest = bits & 0xFFFFFu;
  uint32_t code = ((e + 7) << 3) | kept;
  if (rest > 0x80000u || (rest == 0x80000u && (kept & 1u) != 0)) ++code;
  return sign | static_cast<uint8_t>(code);
}

float e8m0_decode(uint8_t code) {
  if (e8m0_is_nan(code)) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(code) - 127);  // code 0: 2^-127, a subnormal
}

uint8_t e8m0_encode_round_up(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits &= 0x7FFFFFFFu;
  const uint32_t exp_field = bits >> 23;
  if (exp_field == 0xFF) return 0xFF;  // infinity or NaN
  const uint32_t code = exp_field + ((bits & 0x7FFFFFu) != 0 ? 1u : 0u);
  return code >= 0xFF ? 0xFF : static_cast<uint8_t>(code);
}

}  // namespace fp4arena
