#include "reference/fp4_quantize.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <sstream>

#include "reference/fp4_codecs.h"
#include "reference/parallel.h"

namespace fp4arena {
namespace {

constexpr int kMaxBlock = 32;

// A rounded value: its code and, where the unrounded value is a near-tie, the code on the
// other side of the boundary (alt == code otherwise).
struct Rounded {
  uint8_t code;
  uint8_t alt;
  // The code across an exactly hit midpoint that was NOT declared a tie because gs and S are
  // powers of two (== code otherwise): acceptable only to a submission whose global scale is
  // not bit-identical to the reference's, since then its v is no longer exact.
  uint8_t mid_alt;
};

// Near-tie test of a magnitude `a` against a boundary b. An exact hit (a == b) is a tie too
// unless `exact_hit_is_exact`: the caller knows every evaluation order computes the value
// exactly (see the header), so round-half-to-even alone decides.
bool NearBoundary(float a, float b, bool exact_hit_is_exact) {
  if (a == b) return !exact_hit_is_exact;
  return std::fabs(a - b) <= kTieRelBound * b;
}

bool ExactMidpoint(float a, float b, bool exact_hit_is_exact) {
  return a == b && exact_hit_is_exact;
}

// A positive normal power of two, or a positive subnormal one (a single mantissa bit).
bool IsPowerOfTwo(float s) {
  uint32_t b;
  std::memcpy(&b, &s, sizeof b);
  if (b == 0 || (b >> 31) != 0) return false;
  const uint32_t exp = b >> 23, man = b & 0x7FFFFFu;
  if (exp == 0xFF) return false;
  return exp != 0 ? man == 0 : (man & (man - 1)) == 0;
}

// `exact` as for NearBoundary.
Rounded E2m1Round(float v, bool exact) {
  const uint8_t code = e2m1_encode_rne(v);
  Rounded r{code, code, code};
  if (std::isnan(v)) return r;
  // The boundaries with the magnitude codes below and above (exact midpoints), -1 where there
  // is none: no magnitude is near -1, so the tests below fail there without a branch on it.
  static constexpr float kBelow[8] = {-1.0f, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  static constexpr float kAbove[8] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, -1.0f};
  const float a = std::fabs(v);
  const int mag = code & 0x7;
  const uint8_t below = static_cast<uint8_t>((code & 0x8) | (mag - 1));
  const uint8_t above = static_cast<uint8_t>((code & 0x8) | (mag + 1));
  // The code below first, then the one above (which wins where both are near).
  if (NearBoundary(a, kBelow[mag], exact)) r.alt = below;
  if (ExactMidpoint(a, kBelow[mag], exact)) r.mid_alt = below;
  if (NearBoundary(a, kAbove[mag], exact)) r.alt = above;
  if (ExactMidpoint(a, kAbove[mag], exact)) r.mid_alt = above;
  return r;
}

// Scales are non-negative, so only magnitude codes 0..0x7E occur. An exact hit on a midpoint
// is always a tie: the division by 6 (or 4) may be evaluated as a multiplication by a rounded
// reciprocal, so no order-independent exact value exists.
Rounded E4m3Round(float s) {
  const uint8_t code = e4m3_encode_rne(s);
  Rounded r{code, code, code};
  if (std::isnan(s) || (code & 0x80)) return r;
  for (int nb : {code - 1, code + 1}) {
    if (nb < 0 || nb > 0x7E) continue;
    const float b = 0.5f * (e4m3_decode(code) + e4m3_decode(static_cast<uint8_t>(nb)));  // exact
    if (NearBoundary(s, b, false)) r.alt = static_cast<uint8_t>(nb);
  }
  return r;
}

// One plausible way a correct kernel can quantize a block: its scale code and, per element,
// the code and its near-tie alternative.
struct Variant {
  uint8_t scale;
  Rounded elem[kMaxBlock];
};

// The pinned element formulas.
enum class ElementFormula {
  kStatic6,     // v = (x * gs) / S
  kFourOverSix  // v = x * (1.0f / (ds * S))
};

// The pinned element formula under block scale S, before E2M1 rounding: x * gs / S (rule 0)
// or x * (1 / (ds * S)) (rule 1, the reciprocal taken once a block).
struct ElementScaling {
  ElementScaling(ElementFormula f, float gs, float ds, float s)
      : f(f), gs(gs), s(s), r(f == ElementFormula::kFourOverSix ? 1.0f / (ds * s) : 0.0f) {}
  float operator()(float x) const { return f == ElementFormula::kStatic6 ? x * gs / s : x * r; }
  ElementFormula f;
  float gs, s, r;
};

Variant QuantizeBlock(const float* x, int n, uint8_t scale_code, ElementFormula f, float gs,
                      float ds) {
  Variant var;
  var.scale = scale_code;
  const float s = e4m3_decode(scale_code);
  const ElementScaling scaled(f, gs, ds, s);
  // With gs and S powers of two, x * gs / S and every reordering of it is exact.
  const bool exact = IsPowerOfTwo(gs) && IsPowerOfTwo(s);
  for (int i = 0; i < n; ++i) {
    if (s == 0.0f) {
      var.elem[i] = Rounded{0, 0, 0};
      continue;
    }
    var.elem[i] = E2m1Round(scaled(x[i]), exact);
  }
  return var;
}

// A block's plausible variants, the reference's own answer first: at most 2 (rule 0) or, for
// rule 1, two per pair of plausible scale codes (2 x 2 pairs).
struct Variants {
  Variant v[8];
  int count = 0;
  void push_back(const Variant& x) { v[count++] = x; }
  const Variant* begin() const { return v; }
  const Variant* end() const { return v + count; }
  const Variant& operator[](int i) const { return v[i]; }
};

// Folds a block's plausible variants (variants[0] is the reference's own answer) into `q`.
void Fold(const Variants& variants, int n, size_t blk, QuantizedFp4* q) {
  // Distinct plausible scale codes, the reference's own first. At most kMaxScaleOptions:
  // rule 0 has 2 scale candidates, rule 1 two per 4/6 candidate.
  uint8_t* options = q->scale_options.data() + blk * kMaxScaleOptions;
  int count = 0;
  for (const Variant& v : variants) {
    if (std::find(options, options + count, v.scale) == options + count &&
        count < kMaxScaleOptions) {
      options[count++] = v.scale;
    }
  }
  std::fill(options + count, options + kMaxScaleOptions, options[0]);
  q->scales[blk] = options[0];
  q->scales_alt[blk] = options[count > 1 ? 1 : 0];
  q->scale_tie[blk] = count > 1;
  for (int i = 0; i < n; ++i) {
    const Rounded own = variants[0].elem[i];
    uint16_t accept = 0, up = 0, down = 0;
    for (const Variant& v : variants) {
      const Rounded& r = v.elem[i];
      accept = static_cast<uint16_t>(accept | (1u << r.code) | (1u << r.alt));
      // A larger global scale moves |v| up across the midpoint, a smaller one down.
      if ((r.mid_alt & 7) > (r.code & 7)) up = static_cast<uint16_t>(up | (1u << r.mid_alt));
      if ((r.mid_alt & 7) < (r.code & 7)) down = static_cast<uint16_t>(down | (1u << r.mid_alt));
    }
    // The other code to name: the element's own near-tie neighbour first, else the lowest
    // other code some variant produced.
    uint8_t alt = own.alt;
    const unsigned others = accept & ~(1u << own.code);
    if (alt == own.code && others != 0) alt = static_cast<uint8_t>(__builtin_ctz(others));
    const size_t e = blk * n + i;
    const int shift = (e & 1) ? 4 : 0;
    q->packed[e / 2] = static_cast<uint8_t>(q->packed[e / 2] | (own.code << shift));
    q->element_accept[e] = accept;
    if (!q->element_tie.empty()) {  // asked for
      q->packed_alt[e / 2] = static_cast<uint8_t>(q->packed_alt[e / 2] | (alt << shift));
      q->element_tie[e] = alt != own.code;
    }
    if (q->element_accept_gs_up.empty()) continue;  // not asked for
    q->element_accept_gs_up[e] = static_cast<uint16_t>(accept | up);
    q->element_accept_gs_down[e] = static_cast<uint16_t>(accept | down);
  }
}

// The outputs `outputs` leaves out stay empty (see nvfp4_quantize_ref).
QuantizedFp4 Allocate(int rows, int cols, int block, Fp4RefOutputs outputs = {}) {
  QuantizedFp4 q;
  q.rows = rows;
  q.cols = cols;
  q.block = block;
  const size_t count = static_cast<size_t>(rows) * cols;
  q.packed.assign(count / 2, 0);
  if (outputs.tie_codes) {
    q.packed_alt.assign(count / 2, 0);
    q.element_tie.assign(count, 0);
  }
  q.element_accept.assign(count, 1);  // code 0, until a block is quantized
  if (outputs.gs_neighbours) {
    q.element_accept_gs_up.assign(count, 1);
    q.element_accept_gs_down.assign(count, 1);
  }
  q.scales.assign(count / block, 0);
  q.scales_alt.assign(count / block, 0);
  q.scale_tie.assign(count / block, 0);
  q.scale_options.assign(count / block * kMaxScaleOptions, 0);
  return q;
}

// max |x| over n values; NaN left out, as std::fmax(m, |x|) would (m is never NaN, so a
// NaN |x| loses the comparison), as in nvfp4_quantize. A comparison, not a libm call, in 8
// running maxima side by side so that the loop vectorises (a maximum does not depend on the
// order it is taken in: the result is the same bits).
float AbsMax(const float* x, size_t n) {
  constexpr size_t kLanes = 8;
  float lane[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) {
      const float a = std::fabs(x[i + j]);
      lane[j] = a > lane[j] ? a : lane[j];
    }
  }
  float m = 0.0f;
  for (; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (a > m) m = a;
  }
  for (float a : lane) m = a > m ? a : m;
  return m;
}

// Whether any of n values is NaN or infinite, without a branch per value.
bool AllFinite(const float* x, size_t n) {
  int bad = 0;
  for (size_t i = 0; i < n; ++i) bad |= !(std::fabs(x[i]) <= FLT_MAX);
  return bad == 0;
}

// The fast path's element codes: code[i] = e2m1_encode_rne(v[i]) for n values. False where some
// |v[i]| lies on a rounding boundary or within the near-tie bound of one (every boundary is
// tested, a superset of the neighbours E2m1Round tests): that block then takes the general
// path, which marks its ties. Branch-free over the elements, so that it vectorises.
bool PlainCodes(const float* v, int n, uint8_t* code) {
  static constexpr float kBoundaries[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  int near = 0;
  for (int i = 0; i < n; ++i) {
    const float a = std::fabs(v[i]);
    for (float b : kBoundaries) near |= std::fabs(a - b) <= kTieRelBound * b;
    code[i] = e2m1_encode_rne(v[i]);
  }
  return near == 0;
}

// Writes a block with one plausible answer (no scale or element tie, no exactly hit
// midpoint): what Fold writes for a single variant whose codes have no alternatives, and
// every MXFP4 block.
void WritePlain(const uint8_t* code, int n, uint8_t scale, size_t blk, QuantizedFp4* q) {
  std::fill_n(q->scale_options.begin() + blk * kMaxScaleOptions, kMaxScaleOptions, scale);
  q->scales[blk] = q->scales_alt[blk] = scale;
  q->scale_tie[blk] = 0;
  const size_t first = blk * n;
  for (int i = 0; i < n; i += 2) {
    const uint8_t byte = static_cast<uint8_t>(code[i] | (code[i + 1] << 4));
    q->packed[(first + i) / 2] = byte;
    if (!q->packed_alt.empty()) q->packed_alt[(first + i) / 2] = byte;
  }
  if (!q->element_tie.empty()) std::fill_n(q->element_tie.begin() + first, n, 0);
  for (int i = 0; i < n; ++i) q->element_accept[first + i] = static_cast<uint16_t>(1u << code[i]);
  if (q->element_accept_gs_up.empty()) return;
  std::copy_n(q->element_accept.begin() + first, n, q->element_accept_gs_up.begin() + first);
  std::copy_n(q->element_accept.begin() + first, n, q->element_accept_gs_down.begin() + first);
}

// A candidate's codes under scale code `scale` by the pinned element formula `f`, as
// QuantizeBlock computes them; false where the block needs the general path.
bool PlainCandidate(const float* x, int n, uint8_t scale, ElementFormula f, float gs, float ds,
                    uint8_t* code) {
  const float s = e4m3_decode(scale);
  if (s == 0.0f) {
    std::fill_n(code, n, 0);
    return true;
  }
  const ElementScaling scaled(f, gs, ds, s);
  float v[kMaxBlock];
  for (int i = 0; i < n; ++i) v[i] = scaled(x[i]);
  return PlainCodes(v, n, code);
}

// Rule 1's candidate error err_c and the two sums of its tie bound (see the header).
struct CandidateError {
  float err;     // pinned FP32 sum
  double x_abs;  // sum |x_i| |d_i|
  double e;      // sum d_i^2
};

CandidateError FourOverSixError(const float* x, int n, uint8_t scale, const uint8_t* code,
                                float amax) {
  const float s = e4m3_decode(scale);
  CandidateError ce{0.0f, 0.0, 0.0};
  for (int i = 0; i < n; ++i) {
    const float deq = e2m1_decode(code[i]) * s * amax / 1536.0f;
    const float d = deq - x[i];
    ce.err += d * d;
    ce.x_abs += std::fabs(static_cast<double>(x[i])) * std::fabs(static_cast<double>(d));
    ce.e += static_cast<double>(d) * d;
  }
  return ce;
}

CandidateError FourOverSixError(const float* x, int n, const Variant& var, float amax) {
  uint8_t code[kMaxBlock];
  for (int i = 0; i < n; ++i) code[i] = var.elem[i].code;
  return FourOverSixError(x, n, var.scale, code, amax);
}

// Rule 1's 4-vs-6 choice: whether 4 wins, and whether the choice is a near-tie (see the header).
bool ChoiceIsTie(const CandidateError& e6, const CandidateError& e4) {
  const double bound = 0x1p-17 * (e6.x_abs + e4.x_abs + e6.e + e4.e);
  // Also when the two candidates dequantize to identical products e2m1*S (err_4 == err_6
  // here): an order that forms S/gs or S*amax first rounds them differently. And when
  // e2m1*S*amax overflowed (amax > FLT_MAX/1536): other orders stay finite.
  return !std::isfinite(e4.err) || !std::isfinite(e6.err) ||
         std::fabs(static_cast<double>(e4.err) - e6.err) <= bound;
}

void Rule0Block(const float* xb, float gs, size_t blk, QuantizedFp4* q) {
  const float bmax = AbsMax(xb, 16);
  const Rounded sc = E4m3Round(bmax / 6.0f * gs);
  uint8_t code[16];
  if (sc.alt == sc.code &&
      PlainCandidate(xb, 16, sc.code, ElementFormula::kStatic6, gs, 0.0f, code)) {
    WritePlain(code, 16, sc.code, blk, q);
    return;
  }
  Variants variants;
  variants.push_back(QuantizeBlock(xb, 16, sc.code, ElementFormula::kStatic6, gs, 0.0f));
  if (sc.alt != sc.code) {
    variants.push_back(QuantizeBlock(xb, 16, sc.alt, ElementFormula::kStatic6, gs, 0.0f));
  }
  Fold(variants, 16, blk, q);
}

// Rule 1's fast path for a block whose scale candidates have no tie: both candidates' codes
// and errors as Rule1Block computes them; false (nothing written) where an element or the
// 4-vs-6 choice is a near-tie.
bool Rule1Plain(const float* xb, float amax, float gs, float ds, uint8_t scale6, uint8_t scale4,
                size_t blk, QuantizedFp4* q) {
  uint8_t code6[16], code4[16];
  if (!PlainCandidate(xb, 16, scale6, ElementFormula::kFourOverSix, gs, ds, code6) ||
      !PlainCandidate(xb, 16, scale4, ElementFormula::kFourOverSix, gs, ds, code4)) {
    return false;
  }
  const CandidateError e6 = FourOverSixError(xb, 16, scale6, code6, amax);
  const CandidateError e4 = FourOverSixError(xb, 16, scale4, code4, amax);
  if (ChoiceIsTie(e6, e4)) return false;
  const bool four = e4.err < e6.err;
  q->chose_four[blk] = four;
  WritePlain(four ? code4 : code6, 16, four ? scale4 : scale6, blk, q);
  return true;
}

void Rule1Block(const float* xb, float amax, float gs, float ds, size_t blk, QuantizedFp4* q) {
  const float bmax = AbsMax(xb, 16);
  const float s6 = bmax / 6.0f * gs;
  const float s4 = s6 * 1.5f;
  const Rounded r6 = E4m3Round(s6), r4 = E4m3Round(s4);
  if (r6.alt == r6.code && r4.alt == r4.code &&
      Rule1Plain(xb, amax, gs, ds, r6.code, r4.code, blk, q)) {
    return;
  }
  // Every plausible scale pair; the first is the reference's own.
  const uint8_t opts6[2] = {r6.code, r6.alt}, opts4[2] = {r4.code, r4.alt};
  const int n6 = r6.alt != r6.code ? 2 : 1, n4 = r4.alt != r4.code ? 2 : 1;
  Variant q6[2], q4[2];
  for (int i = 0; i < n6; ++i) {
    q6[i] = QuantizeBlock(xb, 16, opts6[i], ElementFormula::kFourOverSix, gs, ds);
  }
  for (int i = 0; i < n4; ++i) {
    q4[i] = QuantizeBlock(xb, 16, opts4[i], ElementFormula::kFourOverSix, gs, ds);
  }
  Variants variants;
  bool first = true;
  for (int i6 = 0; i6 < n6; ++i6) {
    for (int i4 = 0; i4 < n4; ++i4) {
      const Variant& v6 = q6[i6];
      const Variant& v4 = q4[i4];
      const CandidateError e6 = FourOverSixError(xb, 16, v6, amax);
      const CandidateError e4 = FourOverSixError(xb, 16, v4, amax);
      const bool four = e4.err < e6.err;
      const bool tie = ChoiceIsTie(e6, e4);
      if (first) q->chose_four[blk] = four;
      first = false;
      variants.push_back(four ? v4 : v6);
      if (tie) variants.push_back(four ? v6 : v4);
    }
  }
  Fold(variants, 16, blk, q);
}

// Blocks are independent once the global scale is known: fn(blk) for every block, spread
// over `threads` threads in chunks (each block writes only its own bytes of `q`).
template <typename Fn>
void ForEachBlock(size_t blocks, int threads, const Fn& fn) {
  constexpr size_t kChunk = 4096;
  ParallelFor(ResolveThreads(threads), (blocks + kChunk - 1) / kChunk, [&](size_t chunk) {
    const size_t end = std::min(blocks, (chunk + 1) * kChunk);
    for (size_t blk = chunk * kChunk; blk < end; ++blk) fn(blk);
  });
}

// max |x| (NaN left out) and whether every value is finite, over `count` values.
void ScanTensor(const float* x, size_t count, int threads, float* amax, bool* finite) {
  constexpr size_t kChunk = size_t(1) << 16;
  const size_t chunks = (count + kChunk - 1) / kChunk;
  std::vector<float> part_max(chunks, 0.0f);
  std::vector<uint8_t> part_finite(chunks, 1);
  ParallelFor(ResolveThreads(threads), chunks, [&](size_t c) {
    const size_t begin = c * kChunk, n = std::min(count, begin + kChunk) - begin;
    part_max[c] = AbsMax(x + begin, n);
    part_finite[c] = AllFinite(x + begin, n);
  });
  *amax = 0.0f;
  *finite = true;
  for (size_t c = 0; c < chunks; ++c) {
    *amax = std::fmax(*amax, part_max[c]);
    *finite = *finite && part_finite[c];
  }
}

}  // namespace

QuantizedFp4 nvfp4_quantize_ref(const float* x, int rows, int cols, int rule, int threads,
                                Fp4RefOutputs outputs) {
  if (rows <= 0 || cols <= 0 || cols % 16 != 0) return {};
  if (rule != kNvfp4RuleStatic6 && rule != kNvfp4RuleFourOverSix) return {};
  QuantizedFp4 q = Allocate(rows, cols, 16, outputs);
  const size_t count = static_cast<size_t>(rows) * cols;
  const size_t blocks = count / 16;
  // Like nvfp4_quantize: a non-finite amax falls back to a global scale of 1.
  bool finite = true;
  float amax = 0.0f;
  ScanTensor(x, count, threads, &amax, &finite);
  if (rule == kNvfp4RuleStatic6) {
    const float gs = (finite && amax > 0.0f) ? 2688.0f / amax : 1.0f;
    q.global_scale = gs;
    ForEachBlock(blocks, threads, [&](size_t blk) { Rule0Block(x + blk * 16, gs, blk, &q); });
    return q;
  }
  q.chose_four.assign(blocks, 0);
  if (!finite || amax == 0.0f) return q;  // all codes 0, global scale 1
  const float gs = 1536.0f / amax;
  const float ds = 1.0f / gs;
  q.global_scale = gs;
  ForEachBlock(blocks, threads,
               [&](size_t blk) { Rule1Block(x + blk * 16, amax, gs, ds, blk, &q); });
  return q;
}

QuantizedFp4 mxfp4_quantize_ref(const float* x, int rows, int cols, int threads,
                                Fp4RefOutputs outputs) {
  if (rows <= 0 || cols <= 0 || cols % 32 != 0) return {};
  QuantizedFp4 q = Allocate(rows, cols, 32, outputs);
  const size_t blocks = static_cast<size_t>(rows) * cols / 32;
  ForEachBlock(blocks, threads, [&](size_t blk) {
    const float* xb = x + blk * 32;
    const uint8_t sc = e8m0_encode_round_up(AbsMax(xb, 32) / 6.0f);
    const float s = e8m0_decode(sc);
    uint8_t code[32] = {};  // scale code 0: an all-zero block (for BF16 inputs), codes 0
    if (sc != 0) {
      for (int i = 0; i < 32; ++i) code[i] = e2m1_encode_rne(xb[i] / s);
    }
    WritePlain(code, 32, sc, blk, &q);  // no ties in MXFP4: one answer a block
  });
  return q;
}

std::vector<float> mxfp4_dequantize(const uint8_t* packed, const uint8_t* scales, int rows,
                                    int cols) {
  if (rows <= 0 || cols <= 0 || cols % 32 != 0) return {};
  const size_t count = static_cast<size_t>(rows) * cols;
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i) {
    const uint8_t byte = packed[i / 2];
    const uint8_t code = (i & 1) ? (byte >> 4) : (byte & 0xF);
    out[i] = e2m1_decode(code) * e8m0_decode(scales[i / 32]);
  }
  return out;
}

std::vector<float> fp4_dequantize(const QuantizedFp4& q) {
  if (q.rows <= 0 || q.block <= 0) return {};
  const size_t count = static_cast<size_t>(q.rows) * q.cols;
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i) {
    const uint8_t byte = q.packed[i / 2];
    const uint8_t code = (i & 1) ? (byte >> 4) : (byte & 0xF);
    const uint8_t sc = q.scales[i / q.block];
    const float s = q.block == 32 ? e8m0_decode(sc) : e4m3_decode(sc);
    out[i] = e2m1_decode(code) * s / q.global_scale;
  }
  return out;
}

Fp4Comparison compare_exact_or_tie(const QuantizedFp4& ref, const uint8_t* packed,
                                   const uint8_t* scales, float global_scale) {
  Fp4Comparison c;
  auto note = [&](const std::string& what) {
    if (c.first_mismatch.empty()) c.first_mismatch = what;
  };
  uint32_t want_bits, got_bits;
  std::memcpy(&want_bits, &ref.global_scale, sizeof want_bits);
  std::memcpy(&got_bits, &global_scale, sizeof got_bits);
  const int64_t ulps = static_cast<int64_t>(want_bits) - static_cast<int64_t>(got_bits);
  c.global_scale_ok = std::isfinite(global_scale) && (want_bits >> 31) == (got_bits >> 31) &&
                      ulps >= -1 && ulps <= 1;
  if (!c.global_scale_ok) {
    std::ostringstream os;
    os << "global scale " << global_scale << ", want " << ref.global_scale << " (1 ulp)";
    note(os.str());
  }
  if (ref.rows <= 0 || ref.block <= 0) return c;
  // Both positive here unless global_scale_ok is already false.
  const std::vector<uint16_t>& accept = got_bits == want_bits  ? ref.element_accept
                                        : got_bits > want_bits ? ref.element_accept_gs_up
                                                               : ref.element_accept_gs_down;
  const size_t count = static_cast<size_t>(ref.rows) * ref.cols;
  const int per_row = ref.cols / ref.block;
  for (size_t k = 0; k < count / ref.block; ++k) {
    const uint8_t got = scales[k];
    if (got == ref.scales[k]) continue;
    const uint8_t* options = ref.scale_options.data() + k * kMaxScaleOptions;
    if (std::find(options, options + kMaxScaleOptions, got) != options + kMaxScaleOptions) {
      ++c.scale_alternatives;
      continue;
    }
    ++c.scale_mismatches;
    std::ostringstream os;
    os << "scale (" << k / per_row << ", " << k % per_row << "): code " << int{got} << ", want "
       << int{ref.scales[k]} << " (or " << int{ref.scales_alt[k]} << ")";
    note(os.str());
  }
  for (size_t i = 0; i < count; ++i) {
    const int shift = (i & 1) ? 4 : 0;
    const uint8_t got = (packed[i / 2] >> shift) & 0xF;
    const uint8_t want = (ref.packed[i / 2] >> shift) & 0xF;
    const uint8_t alt = ref.packed_alt.empty() ? want : (ref.packed_alt[i / 2] >> shift) & 0xF;
    if (got == want) continue;
    if ((accept[i] >> got) & 1) {
      ++c.element_alternatives;
      continue;
    }
    ++c.element_mismatches;
    std::ostringstream os;
    os << "element (" << i / ref.cols << ", " << i % ref.cols << "): code " << int{got} << ", want "
       << int{want} << " (or " << int{alt} << ")";
    note(os.str());
  }
  return c;
}

}  // namespace fp4arena
