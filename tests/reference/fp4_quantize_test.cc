#include "reference/fp4_quantize.h"

#include "tests/reference/e2m1_half_away.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "reference/fp4_codecs.h"
#include "reference/nvfp4.h"

namespace fp4arena {
namespace {

// Rounds to the nearest BF16 value (ties to even), as the challenges' inputs are.
float Bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  u &= 0xFFFF0000u;
  float y;
  std::memcpy(&y, &u, sizeof y);
  return y;
}

using testing::E2m1HalfAway;

uint8_t Nib(const std::vector<uint8_t>& packed, size_t i) {
  return (i & 1) ? packed[i / 2] >> 4 : packed[i / 2] & 0xF;
}

void SetNib(std::vector<uint8_t>* packed, size_t i, uint8_t code) {
  uint8_t& byte = (*packed)[i / 2];
  byte = (i & 1) ? static_cast<uint8_t>((byte & 0x0F) | (code << 4))
                 : static_cast<uint8_t>((byte & 0xF0) | code);
}

// A submission's outputs.
struct Codes {
  std::vector<uint8_t> packed, scales;
  float global_scale = 1.0f;
};

Codes Allocate(int rows, int cols, int block) {
  Codes c;
  c.packed.assign(static_cast<size_t>(rows) * cols / 2, 0);
  c.scales.assign(static_cast<size_t>(rows) * cols / block, 0);
  return c;
}

float AbsMax(const float* x, size_t n) {
  float m = 0.0f;
  for (size_t i = 0; i < n; ++i) m = std::fmax(m, std::fabs(x[i]));
  return m;
}

// ---- Second implementations: the same rules, evaluated in other orders -----------------

// Rule 0 in other orders:
//   order 0, fouroversix's own (compute_nv_scale_factors with static_6):
//            s = bmax * (gs / 6), v = x * (1 / ((1 / gs) * S));
//   order 1: s = (bmax * gs) / 6, v = x * (gs / S);
//   order 2: s = bmax * (gs * (1 / 6)), v = (x / S) * gs;
//   order 3: the pinned order with a global scale one ulp above the reference's (the judge
//            accepts that global scale);
//   order 4: the same one ulp below.
Codes Rule0OtherOrder(const std::vector<float>& x, int rows, int cols, int order) {
  Codes c = Allocate(rows, cols, 16);
  const float amax = AbsMax(x.data(), x.size());
  float gs = amax > 0.0f ? 2688.0f / amax : 1.0f;
  if (order == 3) gs = std::nextafter(gs, 1e30f);
  if (order == 4) gs = std::nextafter(gs, 0.0f);
  const float ds = 1.0f / gs;
  c.global_scale = gs;
  for (size_t blk = 0; blk < c.scales.size(); ++blk) {
    const float* xb = x.data() + blk * 16;
    const float bmax = AbsMax(xb, 16);
    const float sv = order == 0   ? bmax * (gs / 6.0f)
                     : order == 1 ? bmax * gs / 6.0f
                     : order == 2 ? bmax * (gs * (1.0f / 6.0f))
                                  : bmax / 6.0f * gs;
    c.scales[blk] = e4m3_encode_rne(sv);
    const float s = e4m3_decode(c.scales[blk]);
    for (int i = 0; i < 16; ++i) {
      const float v = order == 0   ? xb[i] * (1.0f / (ds * s))
                      : order == 1 ? xb[i] * (gs / s)
                      : order == 2 ? xb[i] / s * gs
                                   : xb[i] * gs / s;
      SetNib(&c.packed, blk * 16 + i, s == 0.0f ? 0 : e2m1_encode_rne(v));
    }
  }
  return c;
}

float PairwiseSum(const float* t, int n) {
  if (n == 1) return t[0];
  return PairwiseSum(t, n / 2) + PairwiseSum(t + n / 2, n - n / 2);
}

// Rule 1 in other orders:
//   order 0: s6 = (bmax * gs) / 6, s4 = (bmax * gs) / 4, v = (x * gs) / S, deq = (q * S) / gs,
//            errors summed as a tree;
//   order 1: the global scale one ulp below the reference's, s6 = bmax * (gs / 6),
//            s4 = bmax * (gs / 4), v = x * (gs / S), deq = q * (S / gs), errors summed
//            backwards;
//   order 2: as order 1 with the global scale one ulp above.
Codes Rule1OtherOrder(const std::vector<float>& x, int rows, int cols, int order) {
  Codes c = Allocate(rows, cols, 16);
  const float amax = AbsMax(x.data(), x.size());
  if (amax == 0.0f) return c;
  float gs = 1536.0f / amax;
  if (order == 1) gs = std::nextafter(gs, 0.0f);
  if (order == 2) gs = std::nextafter(gs, 1e30f);
  c.global_scale = gs;
  for (size_t blk = 0; blk < c.scales.size(); ++blk) {
    const float* xb = x.data() + blk * 16;
    const float bmax = AbsMax(xb, 16);
    uint8_t best_scale = 0, best_codes[16] = {};
    float best_err = 0.0f;
    for (float max_value : {6.0f, 4.0f}) {
      const float sv = order == 0 ? bmax * gs / max_value : bmax * (gs / max_value);
      const uint8_t sc = e4m3_encode_rne(sv);
      const float s = e4m3_decode(sc);
      uint8_t codes[16];
      float sq[16];
      for (int i = 0; i < 16; ++i) {
        const float v = order == 0 ? xb[i] * gs / s : xb[i] * (gs / s);
        codes[i] = s == 0.0f ? 0 : e2m1_encode_rne(v);
        const float q = e2m1_decode(codes[i]);
        const float d = (order == 0 ? q * s / gs : q * (s / gs)) - xb[i];
        sq[i] = d * d;
      }
      float err = 0.0f;
      if (order == 0) {
        err = PairwiseSum(sq, 16);
      } else {
        for (int i = 15; i >= 0; --i) err += sq[i];
      }
      if (max_value == 6.0f || err < best_err) {
        best_err = err;
        best_scale = sc;
        std::memcpy(best_codes, codes, sizeof codes);
      }
    }
    c.scales[blk] = best_scale;
    for (int i = 0; i < 16; ++i) SetNib(&c.packed, blk * 16 + i, best_codes[i]);
  }
  return c;
}

// Either rule evaluated in double precision, each value rounded once to FP32 before its code:
// what an implementation with exact arithmetic would produce.
Codes NvExact(const std::vector<float>& x, int rows, int cols, int rule) {
  Codes c = Allocate(rows, cols, 16);
  const double amax = AbsMax(x.data(), x.size());
  if (amax == 0.0) return c;
  const double k = rule == 0 ? 2688.0 : 1536.0;
  c.global_scale = static_cast<float>(k / amax);
  for (size_t blk = 0; blk < c.scales.size(); ++blk) {
    const float* xb = x.data() + blk * 16;
    const double bmax = AbsMax(xb, 16);
    uint8_t best_scale = 0, best_codes[16] = {};
    double best_err = 0.0;
    for (double max_value : {6.0, 4.0}) {
      if (rule == 0 && max_value == 4.0) break;
      const uint8_t sc = e4m3_encode_rne(static_cast<float>(bmax * k / (max_value * amax)));
      const double s = e4m3_decode(sc);
      uint8_t codes[16];
      double err = 0.0;
      for (int i = 0; i < 16; ++i) {
        codes[i] = s == 0.0 ? 0 : e2m1_encode_rne(static_cast<float>(xb[i] * k / (amax * s)));
        const double d = e2m1_decode(codes[i]) * s * amax / k - xb[i];
        err += d * d;
      }
      if (max_value == 6.0 || err < best_err) {
        best_err = err;
        best_scale = sc;
        std::memcpy(best_codes, codes, sizeof codes);
      }
    }
    c.scales[blk] = best_scale;
    for (int i = 0; i < 16; ++i) SetNib(&c.packed, blk * 16 + i, best_codes[i]);
  }
  return c;
}

// ---- Inputs ------------------------------------------------------------------------------

// BF16 values of widely varying magnitude per row, some zeros and some outliers.
std::vector<float> NaturalTensor(std::mt19937* rng, int rows, int cols) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r) {
    const float row_scale = std::exp2(uni(*rng) * 16.0f - 8.0f);
    for (int c = 0; c < cols; ++c) {
      const float p = uni(*rng);
      float v = normal(*rng) * row_scale;
      if (p < 0.02f) v = 0.0f;
      if (p > 0.995f) v *= 40.0f;
      x[static_cast<size_t>(r) * cols + c] = Bf16(v);
    }
  }
  return x;
}

// FP32 inputs (not BF16) built to sit within a few ulps of rounding boundaries, so that
// evaluation orders really disagree: elements at b * S / gs for an E2M1 boundary b, and some
// block maxima that put the unrounded scale at an E4M3 midpoint.
std::vector<float> NearBoundaryTensor(std::mt19937* rng, int rows, int cols, int rule) {
  constexpr float kBoundaries[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  std::uniform_int_distribution<int> ulps(-3, 3);
  std::vector<float> x(static_cast<size_t>(rows) * cols);
  const float amax = Bf16(1.0f + 99.0f * uni(*rng));
  const float gs = rule == 0 ? 2688.0f / amax : 1536.0f / amax;
  for (size_t blk = 0; blk < x.size() / 16; ++blk) {
    float* xb = x.data() + blk * 16;
    const bool four = rule == 1 && uni(*rng) < 0.5f;  // aim at the 4 candidate's scale
    const float max_value = four ? 4.0f : 6.0f;
    float bmax = blk == 0 ? amax : Bf16(amax * (0.01f + 0.99f * uni(*rng)));
    if (blk != 0 && uni(*rng) < 0.25f) {
      // Unrounded scale within a few ulps of an E4M3 midpoint.
      const uint8_t code = static_cast<uint8_t>(0x20 + static_cast<int>(uni(*rng) * 0x50));
      const float mid = 0.5f * (e4m3_decode(code) + e4m3_decode(code + 1));
      bmax = mid * max_value / gs;
      for (int k = ulps(*rng); k != 0; k += k > 0 ? -1 : 1) {
        bmax = std::nextafter(bmax, k > 0 ? 1e30f : 0.0f);
      }
      bmax = std::fmin(bmax, amax);
    }
    xb[0] = uni(*rng) < 0.5f ? -bmax : bmax;
    const float s = four ? bmax / 6.0f * gs * 1.5f : bmax / 6.0f * gs;
    const float scale = e4m3_decode(e4m3_encode_rne(s));
    for (int i = 1; i < 16; ++i) {
      float v;
      if (uni(*rng) < 0.6f && scale > 0.0f) {
        const int nb = four ? 6 : 7;  // keep |v| * S / gs below bmax
        float b = kBoundaries[static_cast<int>(uni(*rng) * nb) % nb];
        v = b * scale / gs;
        for (int k = ulps(*rng); k != 0; k += k > 0 ? -1 : 1) {
          v = std::nextafter(v, k > 0 ? 1e30f : 0.0f);
        }
      } else {
        v = Bf16(bmax * uni(*rng));
      }
      xb[i] = std::fmin(v, bmax) * (uni(*rng) < 0.5f ? -1.0f : 1.0f);
    }
  }
  return x;
}

size_t CountDiffs(const QuantizedFp4& ref, const Codes& c) {
  size_t n = 0;
  for (size_t i = 0; i < ref.element_tie.size(); ++i) n += Nib(ref.packed, i) != Nib(c.packed, i);
  for (size_t k = 0; k < ref.scales.size(); ++k) n += ref.scales[k] != c.scales[k];
  return n;
}

size_t Count(const std::vector<uint8_t>& v) {
  size_t n = 0;
  for (uint8_t b : v) n += b != 0;
  return n;
}

// ---- NVFP4 rule 0 ------------------------------------------------------------------------

TEST(Fp4QuantizeRule0, HandWorkedBlocks) {
  // amax = 10.5, so gs = 2688 / 10.5 = 256 (exact).
  // Block 0, bmax 10.5: s = 10.5 / 6 * 256 = 448 -> E4M3 0x7E; v = x * 256 / 448:
  //   10.5 -> 6 (code 7), 3.5 -> 2 (code 4), -1 -> -0.571 (-0.5, code 9), 7 -> 4 (code 6).
  // Block 1, bmax 6/256: s = 1 -> 0x38; v = x * 256 lands exactly on every E2M1 midpoint
  //   0.25 .75 1.25 1.75 2.5 3.5 5 -> 0 1 1 2 2 4 4 (codes 0 2 2 4 4 6 6), then 6 (code 7);
  //   the second half is the same negated (codes | 8).
  std::vector<float> x(32, 0.0f);
  const float b0[] = {10.5f, 3.5f, -1.0f, 7.0f};
  for (int i = 0; i < 4; ++i) x[i] = b0[i];
  const float mids[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f};
  for (int i = 0; i < 8; ++i) {
    x[16 + i] = mids[i] / 256.0f;
    x[24 + i] = -mids[i] / 256.0f;
  }
  const QuantizedFp4 q = nvfp4_quantize_ref(x.data(), 1, 32, kNvfp4RuleStatic6);
  ASSERT_EQ(q.rows, 1);
  EXPECT_EQ(q.block, 16);
  EXPECT_EQ(q.global_scale, 256.0f);
  EXPECT_EQ(q.scales[0], 0x7E);
  EXPECT_EQ(q.scales[1], 0x38);
  const uint8_t want0[] = {7, 4, 9, 6};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Nib(q.packed, i), want0[i]) << i;
  for (int i = 4; i < 16; ++i) EXPECT_EQ(Nib(q.packed, i), 0) << i;
  const uint8_t want1[] = {0, 2, 2, 4, 4, 6, 6, 7};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(Nib(q.packed, 16 + i), want1[i]) << i;
    EXPECT_EQ(Nib(q.packed, 24 + i), want1[i] | 8) << i;
  }
  // Exact midpoints are not ties, and nothing else here is near one.
  EXPECT_EQ(Count(q.element_tie), 0u);
  EXPECT_EQ(Count(q.scale_tie), 0u);
  EXPECT_EQ(q.packed_alt, q.packed);
  EXPECT_EQ(q.scales_alt, q.scales);
  EXPECT_TRUE(q.chose_four.empty());
  // Dequantized (global scale applied): e2m1 * S / gs.
  const std::vector<float> d = fp4_dequantize(q);
  EXPECT_EQ(d[0], 6.0f * 448.0f / 256.0f);   // 10.5
  EXPECT_EQ(d[2], -0.5f * 448.0f / 256.0f);  // -0.875
  EXPECT_EQ(d[16 + 2], 1.0f / 256.0f);
}

// The standard recipe written out plainly, as a second opinion on rule 0 (which
// nvfp4_quantize in reference/nvfp4.h now wraps).
Nvfp4Tensor PlainRule0(const std::vector<float>& x, int rows, int cols) {
  Nvfp4Tensor t;
  t.rows = rows;
  t.cols = cols;
  float amax = 0.0f;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  t.global_scale = amax > 0.0f ? 448.0f * 6.0f / amax : 1.0f;
  t.packed.assign(x.size() / 2, 0);
  for (size_t blk = 0; blk < x.size() / 16; ++blk) {
    float bmax = 0.0f;
    for (int i = 0; i < 16; ++i) bmax = std::max(bmax, std::fabs(x[blk * 16 + i]));
    const uint8_t code = e4m3_encode_rne(bmax / 6.0f * t.global_scale);
    t.scales.push_back(code);
    const float S = e4m3_decode(code);
    for (int i = 0; i < 16; ++i) {
      const uint8_t c = S == 0.0f ? 0 : e2m1_encode_rne(x[blk * 16 + i] * t.global_scale / S);
      t.packed[(blk * 16 + i) / 2] |= static_cast<uint8_t>(c << (i % 2 ? 4 : 0));
    }
  }
  return t;
}

TEST(Fp4QuantizeRule0, CodesEqualThePlainRecipeAndNvfp4Quantize) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const std::vector<float> x = NaturalTensor(&rng, 8, 128);
    const QuantizedFp4 q = nvfp4_quantize_ref(x.data(), 8, 128, kNvfp4RuleStatic6);
    const Nvfp4Tensor plain = PlainRule0(x, 8, 128);
    EXPECT_EQ(q.packed, plain.packed);
    EXPECT_EQ(q.scales, plain.scales);
    EXPECT_EQ(q.global_scale, plain.global_scale);
    const Nvfp4Tensor t = nvfp4_quantize(x.data(), 8, 128);
    EXPECT_EQ(t.packed, plain.packed);
    EXPECT_EQ(t.scales, plain.scales);
    EXPECT_EQ(t.global_scale, plain.global_scale);
  }
}

// One row of two blocks under power-of-two scales (gs = 2688 / 10.5 = 256; block 1's scale
// 1): block 1 holds every E2M1 midpoint and 6, positive then negative, divided by 256.
std::vector<float> MidpointTensor() {
  std::vector<float> x(32, 0.0f);
  x[0] = 10.5f;
  const float mids[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f};
  for (int i = 0; i < 8; ++i) {
    x[16 + i] = mids[i] / 256.0f;
    x[24 + i] = -mids[i] / 256.0f;
  }
  return x;
}

TEST(Fp4QuantizeRule0, HalfAwayFromZeroFailsOnMidpoints) {
  // Power-of-two scales (gs = 256, S = 1): every order sees the exact midpoints, none is a
  // tie, so a half-away quantizer must fail at 0.25, 1.25, 2.5 and 5 (where even rounds
  // down) and agree at 0.75, 1.75 and 3.5 (where even rounds up).
  const std::vector<float> x = MidpointTensor();
  const QuantizedFp4 q = nvfp4_quantize_ref(x.data(), 1, 32, kNvfp4RuleStatic6);
  Codes c;
  c.packed = q.packed;
  c.scales = q.scales;
  c.global_scale = q.global_scale;
  for (int i = 16; i < 32; ++i) SetNib(&c.packed, i, E2m1HalfAway(x[i] * 256.0f / 1.0f));
  const Fp4Comparison cmp = compare_exact_or_tie(q, c.packed.data(), c.scales.data(), 256.0f);
  EXPECT_FALSE(cmp.ok());
  EXPECT_EQ(cmp.element_mismatches, 8u) << cmp.first_mismatch;
  EXPECT_EQ(cmp.first_mismatch, "element (0, 16): code 1, want 0 (or 0)");
}

TEST(Fp4QuantizeRule0, GlobalScaleOneUlpOffMayRoundExactMidpointsEitherWay) {
  // The same power-of-two midpoints: a kernel whose gs is one ulp above 256 computes
  // v = x * gs' / 1 just above each midpoint and rounds up. With its own gs that is correct,
  // so the judge accepts it; with the reference's exact gs the same codes are rejected.
  const std::vector<float> x = MidpointTensor();
  const QuantizedFp4 q = nvfp4_quantize_ref(x.data(), 1, 32, kNvfp4RuleStatic6);
  const float gs_up = std::nextafter(256.0f, 1e30f);
  std::vector<uint8_t> packed = q.packed;
  for (int i = 16; i < 32; ++i) SetNib(&packed, i, e2m1_encode_rne(x[i] * gs_up / 1.0f));
  EXPECT_NE(packed, q.packed);
  EXPECT_TRUE(compare_exact_or_tie(q, packed.data(), q.scales.data(), gs_up).ok());
  EXPECT_EQ(compare_exact_or_tie(q, packed.data(), q.scales.data(), 256.0f).element_mismatches, 8u);
  // One ulp below moves v below the midpoints, so the rounded-up codes are only right where
  // they equal the even ones (0.75, 1.75, 3.5); at 0.25, 1.25, 2.5, 5 and their negatives
  // they are 8 mismatches.
  const float gs_down = std::nextafter(256.0f, 0.0f);
  EXPECT_EQ(compare_exact_or_tie(q, packed.data(), q.scales.data(), gs_down).element_mismatches,
            8u);
  std::vector<uint8_t> packed_down = q.packed;
  for (int i = 16; i < 32; ++i) SetNib(&packed_down, i, e2m1_encode_rne(x[i] * gs_down / 1.0f));
  EXPECT_TRUE(compare_exact_or_tie(q, packed_down.data(), q.scales.data(), gs_down).ok());
  EXPECT_FALSE(compare_exact_or_tie(q, packed_down.data(), q.scales.data(), 256.0f).ok());
}

TEST(Fp4QuantizeRule0, SaturatesElementsAboveSix) {
  // gs = 256. Block 1: bmax = 25 * 2^-10, s = 25/24 = 1.0417 -> S = 1, so v = 6.25 -> 6.
  // Block 2: bmax = 8.5 * 2^-17, s = 1.4167 * 2^-9 -> the E4M3 subnormal 2^-9, v = 8.5 -> 6.
  std::vector<float> x(48, 0.0f);
  x[0] = 10.5f;
  x[16] = std::ldexp(25.0f, -10);
  x[17] = -std::ldexp(25.0f, -10);
  x[32] = std::ldexp(8.5f, -17);
  const QuantizedFp4 q = nvfp4_quantize_ref(x.data(), 1, 48, kNvfp4RuleStatic6);
  EXPECT_EQ(q.scales[0], 0x7E);  // 448: the tensor amax block saturates E4M3 exactly
  EXPECT_EQ(q.scales[1], 0x38);
  EXPECT_EQ(Nib(q.packed, 16), 7);
  EXPECT_EQ(Nib(q.packed, 17), 15);
  EXPECT_EQ(q.scales[2], 0x01);
  EXPECT_EQ(Nib(q.packed, 32), 7);
  EXPECT_EQ(Count(q.element_tie) + Count(q.scale_tie), 0u);
}

TEST(Fp4QuantizeRule0, Bf16Subnormals) {
  // gs = 256. Block 1 holds only BF16 subnormals: s ~ 2^-121 rounds to E4M3 0, all codes 0
  // (even for the negative ones: code 0 where the scale is 0). Block 2 has bmax 1 (s = 1/6*256
  // = 42.67 -> E4M3 40) and subnormal elements, which scale to values far below 0.25: code 0,
  // or 8 (-0) for negatives.
  std::vector<float> x(48, 0.0f);
  x[0] = 10.5f;
  x[16] = std::ldexp(1.0f, -133);  // the smallest BF16 subnormal
  x[17] = -std::ldexp(1.0f, -130);
  x[18] = std::ldexp(1.5f, -127);
  x[32] = 1.0f;
  x[33] = std::ldexp(1.0f, -133);
  x[34] = -std::ldexp(3.0f, -131);
  const QuantizedFp4 q = nvfp4_quantize_ref(x.data(), 1, 48, kNvfp4RuleStatic6);
  EXPECT_EQ(q.scales[1], 0x00);
  for (int i = 16; i < 32; ++i) EXPECT_EQ(Nib(q.packed, i), 0) << i;
  EXPECT_EQ(q.scales[2], e4m3_encode_rne(1.0f / 6.0f * 256.0f));
  EXPECT_EQ(Nib(q.packed, 33), 0);
  EXPECT_EQ(Nib(q.packed, 34), 8);
  EXPECT_EQ(Count(q.element_tie) + Count(q.scale_tie), 0u);
}

TEST(Fp4QuantizeRule0, AllZeroTensorAndBlocks) {
  for (int rule : {kNvfp4RuleStatic6, kNvfp4RuleFourOverSix}) {
    const std::vector<float> zeros(4 * 64, 0.0f);
    const QuantizedFp4 q = nvfp4_quantize_ref(zeros.data(), 4, 64, rule);
    EXPECT_EQ(q.global_scale, 1.0f) << rule;
    EXPECT_EQ(Count(q.packed) + Count(q.scales), 0u) << rule;
    EXPECT_EQ(Count(q.element_tie) + Count(q.scale_tie), 0u) << rule;
    // One nonzero block among zero blocks: the zero blocks get scale 0 and codes 0.
    std::vector<float> x = zeros;
    x[70] = -3.0f;
    const QuantizedFp4 p = nvfp4_quantize_ref(x.data(), 4, 64, rule);
    for (size_t k = 0; k < p.scales.size(); ++k) {
      if (k == 4) continue;
      EXPECT_EQ(p.scales[k], 0) << rule << " block " << k;
    }
    for (size_t i = 0; i < x.size(); ++i) {
      if (i / 16 == 4) continue;
      EXPECT_EQ(Nib(p.packed, i), 0) << rule << " element " << i;
    }
    EXPECT_EQ(Nib(p.packed, 70), 15) << rule;  // -6 (rule 0) or, rule 1 keeping 6, -6
  }
}

TEST(Fp4QuantizeRule0, LeftOutOutputsAreEmptyAndTheOthersUnchanged) {
  // Gaussian blocks, and (rule 0: amax 10.5, so gs = 256) one block of exactly hit E2M1
  // midpoints under power-of-two scales, where the neighbours' masks add codes.
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(8 * 96);
  for (float& v : x) v = normal(rng);
  x[0] = 10.5f;
  const float mids[8] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f};
  for (int i = 0; i < 16; ++i) x[16 + i] = (i % 2 ? -1.0f : 1.0f) * mids[i % 8] / 256.0f;
  for (int rule : {kNvfp4RuleStatic6, kNvfp4RuleFourOverSix}) {
    const QuantizedFp4 all = nvfp4_quantize_ref(x.data(), 8, 96, rule);
    const QuantizedFp4 lean = nvfp4_quantize_ref(x.data(), 8, 96, rule, 0, {false, true});
    EXPECT_TRUE(lean.element_accept_gs_up.empty() && lean.element_accept_gs_down.empty());
    // Without the tie codes too (the judge's form): those two are empty, the rest as before.
    const QuantizedFp4 judge = nvfp4_quantize_ref(x.data(), 8, 96, rule, 0, {false, false});
    EXPECT_TRUE(judge.packed_alt.empty() && judge.element_tie.empty());
    for (const auto field :
         {&QuantizedFp4::packed, &QuantizedFp4::scales, &QuantizedFp4::scales_alt,
          &QuantizedFp4::scale_tie, &QuantizedFp4::scale_options, &QuantizedFp4::chose_four}) {
      EXPECT_EQ(judge.*field, all.*field) << rule;
    }
    EXPECT_EQ(judge.element_accept, all.element_accept) << rule;
    EXPECT_EQ(judge.global_scale, all.global_scale) << rule;
    if (rule == kNvfp4RuleStatic6) {
      EXPECT_NE(all.element_accept_gs_up, all.element_accept) << "no midpoint was hit";
      EXPECT_NE(all.element_accept_gs_down, all.element_accept) << "no midpoint was hit";
    }
    EXPECT_EQ(lean.global_scale, all.global_scale) << rule;
    EXPECT_EQ(lean.element_accept, all.element_accept) << rule;
    for (const auto field :
         {&QuantizedFp4::packed, &QuantizedFp4::packed_alt, &QuantizedFp4::element_tie,
          &QuantizedFp4::scales, &QuantizedFp4::scales_alt, &QuantizedFp4::scale_tie,
          &QuantizedFp4::scale_options, &QuantizedFp4::chose_four}) {
      EXPECT_EQ(lean.*field, all.*field) << rule;
    }
  }
}

TEST(Fp4QuantizeRule0, OneHugeOutlier) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 0.01f);
  std::vector<float> x(4 * 64);
  for (float& v : x) v = Bf16(normal(rng));
  const float huge = Bf16(3.0e38f);
  x[100] = huge;
  for (int rule : {kNvfp4RuleStatic6, kNvfp4RuleFourOverSix}) {
    const QuantizedFp4 q = nvfp4_quantize_ref(x.data(), 4, 64, rule);
    EXPECT_EQ(q.global_scale, (rule == 0 ? 2688.0f : 1536.0f) / huge);
    // Every other block's scale underflows to 0 (bmax/6*gs ~ 1e-38): codes 0.
    for (size_t k = 0; k < q.scales.size(); ++k) {
      if (k == 100 / 16) continue;
      EXPECT_EQ(q.scales[k], 0) << k;
    }
    for (size_t i = 0; i < x.size(); ++i) {
      if (i == 100) continue;
      EXPECT_EQ(Nib(q.packed, i) & 7, 0) << i;
    }
    EXPECT_EQ(q.scales[100 / 16], rule == 0 ? 0x7E : 0x78);  // 448, or 256 for rule 1
    EXPECT_EQ(Nib(q.packed, 100), 7);
    if (rule == 1) {
      // 6 * 256 == 4 * 384: both candidates dequantize identically (and e2m1 * S * amax
      // overflows to inf in both errors); 6 is kept, and 4 (code 6 under scale 384, 0x7C) is
      // accepted too (see Fp4QuantizeRule1.HandWorkedBlocks).
      EXPECT_EQ(q.chose_four[100 / 16], 0);
      EXPECT_EQ(q.scales_alt[100 / 16], 0x7C);
      EXPECT_EQ(q.element_accept[100], (1 << 7) | (1 << 6));
      EXPECT_EQ(Count(q.scale_tie), 1u);
    } else {
      EXPECT_EQ(Count(q.element_tie) + Count(q.scale_tie), 0u);
    }
  }
}

// ---- NVFP4 rule 1 (four over six) --------------------------------------------------------

TEST(Fp4QuantizeRule1, HandWorkedBlocks) {
  // amax = 6: gs = 1536 / 6 = 256, ds = 1/256. Every block has bmax 6, so
  // s6 = 6/6*256 = 256 (E4M3 0x78) and s4 = 384 (0x7C); r6 = 1/(ds*256) = 1, r4 = 1/1.5.
  // deq = e2m1 * S * 6 / 1536 = e2m1 * S / 256.
  // Block 0 [6, 5, 1.5]: 6 -> v6 6 | v4 4; 5 -> v6 5 (exact midpoint, even: 4, deq 4, err 1)
  //   | v4 3.33 -> 3 (deq 4.5, err 0.25); 1.5 -> v6 1.5 | v4 1 (deq 1.5). err6 = 1 >
  //   err4 = 0.25: keep 4, codes 6 5 2.
  // Block 1 [6, 1]: 1 -> v6 1 (err 0) | v4 0.667 -> 0.5 (deq 0.75, err 0.0625): keep 6.
  // Block 2 [6, 3]: 6 * 256 == 4 * 384 and 3 * 256 == 2 * 384: identical dequantizations,
  //   err4 == err6 == 0 here, keep 6; but q * (S / gs) rounds 256/gs and 384/gs differently
  //   in general, so the choice is a tie: scale 0x78 or 0x7C, codes 7|6 and 5|4.
  std::vector<float> x(48, 0.0f);
  x[0] = 6.0f, x[1] = 5.0f, x[2] = 1.5f;
  x[16] = 6.0f, x[17] = 1.0f;
  x[32] = 6.0f, x[33] = 3.0f;
  const QuantizedFp4 q = nvfp4_quantize_ref(x.data(), 1, 48, kNvfp4RuleFourOverSix);
  ASSERT_EQ(q.rows, 1);
  EXPECT_EQ(q.global_scale, 256.0f);
  ASSERT_EQ(q.chose_four.size(), 3u);
  EXPECT_EQ(q.chose_four[0], 1);
  EXPECT_EQ(q.chose_four[1], 0);
  EXPECT_EQ(q.chose_four[2], 0);
  EXPECT_EQ(q.scales[0], 0x7C);
  EXPECT_EQ(q.scales[1], 0x78);
  EXPECT_EQ(q.scales[2], 0x78);
  EXPECT_EQ(Nib(q.packed, 0), 6);
  EXPECT_EQ(Nib(q.packed, 1), 5);
  EXPECT_EQ(Nib(q.packed, 2), 2);
  EXPECT_EQ(Nib(q.packed, 16), 7);
  EXPECT_EQ(Nib(q.packed, 17), 2);
  EXPECT_EQ(Nib(q.packed, 32), 7);
  EXPECT_EQ(Nib(q.packed, 33), 5);
  EXPECT_EQ(q.scale_tie[0] + q.scale_tie[1], 0);
  EXPECT_EQ(q.scale_tie[2], 1);
  EXPECT_EQ(q.scales_alt[2], 0x7C);
  EXPECT_EQ(q.element_accept[32], (1 << 7) | (1 << 6));
  EXPECT_EQ(q.element_accept[33], (1 << 5) | (1 << 4));
  EXPECT_EQ(q.element_accept[34], 1 << 0);
  EXPECT_EQ(Count(q.element_tie), 2u);
  const std::vector<float> d = fp4_dequantize(q);
  EXPECT_EQ(d[0], 6.0f);
  EXPECT_EQ(d[1], 4.5f);
  EXPECT_EQ(d[2], 1.5f);
  EXPECT_EQ(d[17], 1.0f);
}

TEST(Fp4QuantizeRule1, SaturatesAndPicksFourOnASubnormalScale) {
  // amax 6 (gs 256). Block 1 = [8.5 * 2^-17, 0...]: s6 = 1.4167 * 2^-9 -> S6 = 2^-9, v6 = 8.5
  // saturates to 6 (fouroversix's unsaturated fake quantizer would make it 8); deq6 =
  // 6 * 2^-17, err6 = (2.5 * 2^-17)^2. s4 = 2.125 * 2^-9 -> S4 = 2^-8, v4 = 4.25 -> 4,
  // deq4 = 8 * 2^-17, err4 = (0.5 * 2^-17)^2: keep 4.
  std::vector<float> x(32, 0.0f);
  x[0] = 6.0f;
  x[16] = std::ldexp(8.5f, -17);
  const QuantizedFp4 q = nvfp4_quantize_ref(x.data(), 1, 32, kNvfp4RuleFourOverSix);
  EXPECT_EQ(q.chose_four[1], 1);
  EXPECT_EQ(q.scales[1], 0x02);
  EXPECT_EQ(Nib(q.packed, 16), 6);
  // The 6 candidate's pinned v6 = x * (1 / ((1/256) * 2^-9)) = 8.5 saturates to code 7.
  EXPECT_EQ(e2m1_encode_rne(x[16] * (1.0f / ((1.0f / 256.0f) * std::ldexp(1.0f, -9)))), 7);
}

// ---- Property tests: other evaluation orders differ only at marked ties -----------------

struct TieStats {
  size_t elements = 0, element_ties = 0, scale_ties = 0, diffs = 0, alternatives = 0;
};

void CheckOtherOrders(const std::vector<float>& x, int rows, int cols, int rule, TieStats* stats) {
  const QuantizedFp4 q = nvfp4_quantize_ref(x.data(), rows, cols, rule);
  std::vector<Codes> others;
  if (rule == 0) {
    for (int order = 0; order < 5; ++order) others.push_back(Rule0OtherOrder(x, rows, cols, order));
  } else {
    for (int order = 0; order < 3; ++order) others.push_back(Rule1OtherOrder(x, rows, cols, order));
  }
  others.push_back(NvExact(x, rows, cols, rule));
  for (size_t which = 0; which < others.size(); ++which) {
    const Codes& c = others[which];
    const Fp4Comparison cmp =
        compare_exact_or_tie(q, c.packed.data(), c.scales.data(), c.global_scale);
    EXPECT_TRUE(cmp.ok()) << "implementation " << which << ": " << cmp.first_mismatch;
    stats->diffs += CountDiffs(q, c);
    stats->alternatives += cmp.element_alternatives + cmp.scale_alternatives;
  }
  stats->elements += x.size();
  stats->element_ties += Count(q.element_tie);
  stats->scale_ties += Count(q.scale_tie);
}

TEST(Fp4QuantizeProperty, NaturalTensorsTiesAreRareAndCoverOtherOrders) {
  for (int rule : {kNvfp4RuleStatic6, kNvfp4RuleFourOverSix}) {
    std::mt19937 rng(100 + rule);
    TieStats s;
    for (int trial = 0; trial < 40; ++trial) {
      CheckOtherOrders(NaturalTensor(&rng, 16, 256), 16, 256, rule, &s);
    }
    // Every difference between orders is a tie the comparison accepted.
    EXPECT_EQ(s.diffs, s.alternatives) << rule;
    EXPECT_LT(s.element_ties, s.elements / 100) << rule;
    // Scale ties are rarer than 2% of blocks; in rule 1 they are mostly blocks whose two
    // candidates dequantize identically (see Fp4QuantizeRule1.HandWorkedBlocks).
    EXPECT_LT(s.scale_ties, s.elements / 16 / 50) << rule;
    std::printf("rule %d natural: %zu elements, %zu element ties, %zu scale ties, %zu diffs\n",
                rule, s.elements, s.element_ties, s.scale_ties, s.diffs);
  }
}

TEST(Fp4QuantizeProperty, NearBoundaryTensorsDisagreeOnlyAtTies) {
  for (int rule : {kNvfp4RuleStatic6, kNvfp4RuleFourOverSix}) {
    std::mt19937 rng(200 + rule);
    TieStats s;
    for (int trial = 0; trial < 40; ++trial) {
      CheckOtherOrders(NearBoundaryTensor(&rng, 8, 128, rule), 8, 128, rule, &s);
    }
    EXPECT_EQ(s.diffs, s.alternatives) << rule;
    // The inputs are built to need the ties: the orders really disagree somewhere.
    EXPECT_GT(s.diffs, 0u) << rule;
    EXPECT_GT(s.element_ties, 0u) << rule;
    EXPECT_GT(s.scale_ties, 0u) << rule;
    std::printf(
        "rule %d near-boundary: %zu elements, %zu element ties, %zu scale ties, "
        "%zu diffs\n",
        rule, s.elements, s.element_ties, s.scale_ties, s.diffs);
  }
}

// ---- The comparison ----------------------------------------------------------------------

TEST(Fp4QuantizeCompare, FlippedCodeOrScaleWithoutTieIsCaught) {
  std::mt19937 rng(5);
  const std::vector<float> x = NaturalTensor(&rng, 8, 64);
  for (int rule : {kNvfp4RuleStatic6, kNvfp4RuleFourOverSix}) {
    const QuantizedFp4 q = nvfp4_quantize_ref(x.data(), 8, 64, rule);
    ASSERT_TRUE(compare_exact_or_tie(q, q.packed.data(), q.scales.data(), q.global_scale).ok());
    // Flip each untied element's code to its magnitude neighbour, one at a time.
    for (size_t i = 0; i < x.size(); i += 7) {
      if (q.element_tie[i]) continue;
      std::vector<uint8_t> packed = q.packed;
      const uint8_t code = Nib(packed, i);
      SetNib(&packed, i, static_cast<uint8_t>((code & 8) | ((code & 7) == 7 ? 6 : (code & 7) + 1)));
      const Fp4Comparison cmp =
          compare_exact_or_tie(q, packed.data(), q.scales.data(), q.global_scale);
      EXPECT_EQ(cmp.element_mismatches, 1u) << i;
    }
    for (size_t k = 0; k < q.scales.size(); ++k) {
      if (q.scale_tie[k]) continue;
      std::vector<uint8_t> scales = q.scales;
      scales[k] ^= 1;
      EXPECT_EQ(
          compare_exact_or_tie(q, q.packed.data(), scales.data(), q.global_scale).scale_mismatches,
          1u)
          << k;
    }
  }
}

TEST(Fp4QuantizeCompare, GlobalScaleWithinOneUlp) {
  std::vector<float> x(16, 0.0f);
  x[0] = 3.0f;
  const QuantizedFp4 q = nvfp4_quantize_ref(x.data(), 1, 16, kNvfp4RuleStatic6);
  const float gs = q.global_scale;
  const uint8_t* p = q.packed.data();
  const uint8_t* s = q.scales.data();
  EXPECT_TRUE(compare_exact_or_tie(q, p, s, std::nextafter(gs, 1e30f)).ok());
  EXPECT_TRUE(compare_exact_or_tie(q, p, s, std::nextafter(gs, 0.0f)).ok());
  const float two_up = std::nextafter(std::nextafter(gs, 1e30f), 1e30f);
  EXPECT_FALSE(compare_exact_or_tie(q, p, s, two_up).global_scale_ok);
  EXPECT_FALSE(compare_exact_or_tie(q, p, s, -gs).global_scale_ok);
  EXPECT_FALSE(
      compare_exact_or_tie(q, p, s, std::numeric_limits<float>::quiet_NaN()).global_scale_ok);
}

TEST(Fp4QuantizeCompare, AcceptsTheAlternativeOnlyWhereMarked) {
  std::mt19937 rng(9);
  const std::vector<float> x = NearBoundaryTensor(&rng, 8, 128, kNvfp4RuleStatic6);
  const QuantizedFp4 q = nvfp4_quantize_ref(x.data(), 8, 128, kNvfp4RuleStatic6);
  ASSERT_GT(Count(q.element_tie), 0u);
  std::vector<uint8_t> packed = q.packed;
  size_t taken = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!q.element_tie[i]) continue;
    EXPECT_NE(Nib(q.packed_alt, i), Nib(q.packed, i));
    SetNib(&packed, i, Nib(q.packed_alt, i));
    ++taken;
  }
  Fp4Comparison cmp = compare_exact_or_tie(q, packed.data(), q.scales.data(), q.global_scale);
  EXPECT_TRUE(cmp.ok()) << cmp.first_mismatch;
  EXPECT_EQ(cmp.element_alternatives, taken);
  // Where nothing is marked, packed_alt equals packed: the alternative is no loophole.
  for (size_t i = 0; i < x.size(); ++i) {
    if (!q.element_tie[i]) {
      EXPECT_EQ(Nib(q.packed_alt, i), Nib(q.packed, i));
      EXPECT_EQ(q.element_accept[i], 1u << Nib(q.packed, i));
    }
  }
}

// ---- MXFP4 -------------------------------------------------------------------------------

TEST(Fp4QuantizeMx, HandWorkedBlocks) {
  // Block 0, bmax 7: 7/6 = 1.167 -> round up to 2 (E8M0 128). v = x/2:
  //   7 -> 3.5 (midpoint, even: 4, code 6), 3 -> 1.5 (code 3), -1.25 -> -0.625 (-0.5, code 9),
  //   0.625 -> 0.3125 (0.5, code 1), 5.5 -> 2.75 (3, code 5).
  //   (The OCP spec's floor rule would pick 2^(2-2) = 1 and clamp 7 to 6.)
  // Block 1, bmax 6: 6/6 = 1 exactly, no round up (127). v = x: 6 -> 7, 0.25 -> 0 (even),
  //   -5 -> -4 (even, code 14).
  // Block 2: all zero: scale code 0, codes 0.
  // Block 3, bmax 12: 2 (128); 12 -> 6 (code 7).
  std::vector<float> x(128, 0.0f);
  const float b0[] = {7.0f, 3.0f, -1.25f, 0.625f, 5.5f};
  for (int i = 0; i < 5; ++i) x[i] = b0[i];
  x[32] = 6.0f, x[33] = 0.25f, x[34] = -5.0f;
  x[96] = 12.0f;
  const QuantizedFp4 q = mxfp4_quantize_ref(x.data(), 1, 128);
  ASSERT_EQ(q.rows, 1);
  EXPECT_EQ(q.block, 32);
  EXPECT_EQ(q.global_scale, 1.0f);
  ASSERT_EQ(q.scales.size(), 4u);
  EXPECT_EQ(q.scales[0], 128);
  EXPECT_EQ(q.scales[1], 127);
  EXPECT_EQ(q.scales[2], 0);
  EXPECT_EQ(q.scales[3], 128);
  const uint8_t want0[] = {6, 3, 9, 1, 5};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Nib(q.packed, i), want0[i]) << i;
  EXPECT_EQ(Nib(q.packed, 32), 7);
  EXPECT_EQ(Nib(q.packed, 33), 0);
  EXPECT_EQ(Nib(q.packed, 34), 14);
  for (int i = 64; i < 96; ++i) EXPECT_EQ(Nib(q.packed, i), 0);
  EXPECT_EQ(Nib(q.packed, 96), 7);
  EXPECT_EQ(Count(q.element_tie) + Count(q.scale_tie), 0u);
  const std::vector<float> d = mxfp4_dequantize(q.packed.data(), q.scales.data(), 1, 128);
  EXPECT_EQ(d[0], 8.0f);
  EXPECT_EQ(d[2], -1.0f);
  EXPECT_EQ(d[34], -4.0f);
  EXPECT_EQ(d[96], 12.0f);
  EXPECT_EQ(fp4_dequantize(q), d);
}

TEST(Fp4QuantizeMx, HalfAwayFromZeroFailsOnMidpoints) {
  // MX scales are powers of two, so midpoints are exact in every order and never ties.
  // bmax 6 -> scale 1; x = the seven E2M1 midpoints and their negatives.
  std::vector<float> x(32, 0.0f);
  x[0] = 6.0f;
  const float mids[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  for (int i = 0; i < 7; ++i) {
    x[1 + i] = mids[i];
    x[8 + i] = -mids[i];
  }
  const QuantizedFp4 q = mxfp4_quantize_ref(x.data(), 1, 32);
  ASSERT_EQ(q.scales[0], 127);
  std::vector<uint8_t> packed = q.packed;
  for (int i = 0; i < 32; ++i) SetNib(&packed, i, E2m1HalfAway(x[i]));
  const Fp4Comparison cmp = compare_exact_or_tie(q, packed.data(), q.scales.data(), 1.0f);
  EXPECT_EQ(cmp.element_mismatches, 8u);  // 0.25, 1.25, 2.5, 5 and their negatives
}

TEST(Fp4QuantizeMx, Bf16SubnormalsAndZeros) {
  // bmax = 1.5 * 2^-127: bmax/6 = 2^-129 is an FP32 subnormal -> E8M0 code 1 (2^-126).
  // v = x * 2^126: 1.5 * 2^-127 -> 0.75 (midpoint, even: 1, code 2); 2^-133 -> 2^-7 (code 0);
  // -2^-128 -> -0.25 (midpoint, even: -0, code 8).
  std::vector<float> x(64, 0.0f);
  x[0] = std::ldexp(1.5f, -127);
  x[1] = std::ldexp(1.0f, -133);
  x[2] = -std::ldexp(1.0f, -128);
  const QuantizedFp4 q = mxfp4_quantize_ref(x.data(), 1, 64);
  EXPECT_EQ(q.scales[0], 1);
  EXPECT_EQ(Nib(q.packed, 0), 2);
  EXPECT_EQ(Nib(q.packed, 1), 0);
  EXPECT_EQ(Nib(q.packed, 2), 8);
  EXPECT_EQ(q.scales[1], 0);  // the all-zero block
  const std::vector<float> zeros(64, 0.0f);
  const QuantizedFp4 z = mxfp4_quantize_ref(zeros.data(), 1, 64);
  EXPECT_EQ(Count(z.packed) + Count(z.scales), 0u);
}

TEST(Fp4QuantizeMx, OtherOrdersAgreeExactlyAndNoElementSaturates) {
  // Division by a power of two is exact: x / s, x * (1/s) and double precision all agree
  // bit for bit, which is why mxfp4_quantize_ref marks no ties.
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    const std::vector<float> x = NaturalTensor(&rng, 8, 256);
    const QuantizedFp4 q = mxfp4_quantize_ref(x.data(), 8, 256);
    EXPECT_EQ(Count(q.element_tie) + Count(q.scale_tie), 0u);
    for (size_t k = 0; k < q.scales.size(); ++k) {
      const float* xb = x.data() + k * 32;
      const double bmax = AbsMax(xb, 32);
      // Exact: smallest 2^e >= bmax / 6.
      const int e = bmax == 0.0 ? -127 : static_cast<int>(std::ceil(std::log2(bmax / 6.0)));
      const float s = std::ldexp(1.0f, std::max(e, -126));
      if (bmax != 0.0) {
        ASSERT_EQ(q.scales[k], 127 + std::max(e, -126)) << k;
        ASSERT_LE(bmax / s, 6.0) << k;
      }
      for (int i = 0; i < 32; ++i) {
        const uint8_t a = bmax == 0.0 ? 0 : e2m1_encode_rne(xb[i] * (1.0f / s));
        const uint8_t b =
            bmax == 0.0 ? 0 : e2m1_encode_rne(static_cast<float>(static_cast<double>(xb[i]) / s));
        ASSERT_EQ(Nib(q.packed, k * 32 + i), a) << k << " " << i;
        ASSERT_EQ(a, b);
      }
    }
  }
}

TEST(Fp4QuantizeMx, LeftOutOutputsAreEmptyAndTheOthersUnchanged) {
  std::mt19937 rng(12);
  const std::vector<float> x = NaturalTensor(&rng, 8, 256);
  const QuantizedFp4 all = mxfp4_quantize_ref(x.data(), 8, 256);
  EXPECT_EQ(all.packed_alt, all.packed);  // no ties: the alternatives are the codes
  EXPECT_EQ(all.element_accept_gs_up, all.element_accept);
  EXPECT_EQ(all.element_accept_gs_down, all.element_accept);
  const QuantizedFp4 lean = mxfp4_quantize_ref(x.data(), 8, 256, 0, {false, false});
  EXPECT_TRUE(lean.packed_alt.empty() && lean.element_tie.empty());
  EXPECT_TRUE(lean.element_accept_gs_up.empty() && lean.element_accept_gs_down.empty());
  for (const auto field : {&QuantizedFp4::packed, &QuantizedFp4::scales, &QuantizedFp4::scales_alt,
                           &QuantizedFp4::scale_tie, &QuantizedFp4::scale_options}) {
    EXPECT_EQ(lean.*field, all.*field);
  }
  EXPECT_EQ(lean.element_accept, all.element_accept);
}

TEST(Fp4QuantizeMx, OneHugeOutlier) {
  // bmax = BF16(3e38): bmax/6 ~ 5e37 rounds up to 2^126 (E8M0 253); 3e38 / 2^126 = 3.53 -> 4
  // (code 6). The other blocks keep their own scales: no global scale in MX.
  std::vector<float> x(64, 0.0f);
  const float huge = Bf16(3.0e38f);
  x[5] = huge;
  x[6] = 1.0f;
  x[40] = 1.0f;
  const QuantizedFp4 q = mxfp4_quantize_ref(x.data(), 1, 64);
  EXPECT_EQ(q.scales[0], 253);
  EXPECT_EQ(Nib(q.packed, 5), 6);
  EXPECT_EQ(Nib(q.packed, 6), 0);
  EXPECT_EQ(q.scales[1], 125);  // 1/6 = 0.167 rounds up to 2^-2; 1 / 0.25 = 4 (code 6)
  EXPECT_EQ(Nib(q.packed, 40), 6);
}

TEST(Fp4QuantizeMx, RejectsBadShapes) {
  const std::vector<float> x(48, 1.0f);
  EXPECT_EQ(mxfp4_quantize_ref(x.data(), 1, 48).rows, 0);
  EXPECT_EQ(nvfp4_quantize_ref(x.data(), 1, 40, 0).rows, 0);
  EXPECT_EQ(nvfp4_quantize_ref(x.data(), 1, 48, 2).rows, 0);
  EXPECT_EQ(nvfp4_quantize_ref(x.data(), 0, 48, 0).rows, 0);
}

}  // namespace
}  // namespace fp4arena
