#include "harness/validate.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <sstream>

#include "reference/fp4_codecs.h"
#include "reference/parallel.h"

namespace fp4arena {

bool within_tolerance(double got, double ref, const Tolerance& tol) {
  if (!std::isfinite(got) || !std::isfinite(ref)) return false;
  return std::fabs(got - ref) <= tol.atol + tol.rtol * std::fabs(ref);
}

float half_bits_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal: value = mant * 2^-24, exact in float.
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float bf16_bits_to_float(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint32_t element_code(DType t, const uint8_t* data, int64_t i) {
  switch (t) {
    case DType::kE2m1x2:
      return (data[i / 2] >> (i % 2 ? 4 : 0)) & 0xF;
    case DType::kFp16:
    case DType::kBf16: {
      uint16_t v;
      std::memcpy(&v, data + 2 * i, 2);
      return v;
    }
    case DType::kInt32:
    case DType::kFp32: {
      uint32_t v;
      std::memcpy(&v, data + 4 * i, 4);
      return v;
    }
    default:
      return data[i];
  }
}

double element_value(DType t, const uint8_t* data, int64_t i) {
  uint32_t c = element_code(t, data, i);
  switch (t) {
    case DType::kUint8:
      return double(c);
    case DType::kInt32:
      return double(int32_t(c));
    case DType::kFp16:
      return half_bits_to_float(uint16_t(c));
    case DType::kBf16:
      return bf16_bits_to_float(uint16_t(c));
    case DType::kFp32: {
      float f;
      std::memcpy(&f, &c, 4);
      return f;
    }
    case DType::kFp8E4m3:
      return e4m3_is_nan(uint8_t(c)) ? std::nan("") : double(e4m3_decode(uint8_t(c)));
    case DType::kFp8E8m0:
      return c == 0xFF ? std::nan("") : std::ldexp(1.0, int(c) - 127);
    case DType::kE2m1x2:
      return e2m1_decode(uint8_t(c));
  }
  return 0;
}

namespace {

constexpr int kMapRows = 16;
constexpr int kMapCols = 64;
constexpr size_t kWorst = 8;

// Mantissa bits and minimum normal exponent of the floating output types, for ulp sizes.
void float_format(DType t, int* mant_bits, int* min_exp) {
  switch (t) {
    case DType::kFp16:
      *mant_bits = 10, *min_exp = -14;
      return;
    case DType::kBf16:
      *mant_bits = 7, *min_exp = -126;
      return;
    default:
      *mant_bits = 23, *min_exp = -126;
  }
}

// One unit in the last place of the output type at |x|.
double ulp_at(DType t, double x) {
  int mant_bits, min_exp;
  float_format(t, &mant_bits, &min_exp);
  int e = 0;
  std::frexp(std::fabs(x), &e);  // |x| = f * 2^e, f in [0.5, 1)
  int exp = std::max(e - 1, min_exp);
  return std::ldexp(1.0, exp - mant_bits);
}

double max_finite(DType t) {
  switch (t) {
    case DType::kFp16:
      return 65504.0;
    case DType::kBf16:
      return 3.3895313892515355e38;
    default:
      return std::numeric_limits<float>::max();
  }
}

// The code the poison left in element i: element i % 2 of a poisoned run (the parity picks an
// E2M1 nibble), so the run holds two elements of the widest type (fp32, int32).
uint32_t poison_code(DType t, Poison p, int64_t i) {
  uint8_t fill[8];
  std::memset(fill, dtype_has_nan_poison(t) ? 0xFF : p.byte, sizeof fill);
  return element_code(t, fill, i % 2);
}

struct Cell {
  Mismatch m;
  bool set = false;
};

struct Partial {
  int64_t mismatches = 0, nonfinite = 0, unwritten = 0, ties = 0;
  double max_abs = 0, max_rel = 0, max_excess = 0;
  std::vector<int64_t> cell_fail;
  std::vector<Cell> cell_worst;
};

bool worse(const Mismatch& a, const Mismatch& b) {
  if (a.excess != b.excess) return a.excess > b.excess;
  return a.row != b.row ? a.row < b.row : a.col < b.col;
}

}  // namespace

namespace {

// What one output's comparison needs for every element.
struct Comparison {
  DType t;
  CompareSpec cmp;
  Tolerance tol;
  bool nan_poison, exact, has_ties;
  const uint8_t* got;
  Poison poison;
  const uint8_t* second;
  Poison second_poison;
  const ExpectedOutput& expected;
};

// The summary grid: at most kMapRows x kMapCols cells over the output, each cell's elements.
struct Grid {
  int64_t rows, cols;
  int map_rows, map_cols;
  std::vector<int64_t> count;
  size_t cells() const { return size_t(map_rows) * map_cols; }
  size_t cell_of(int64_t r, int64_t c) const {
    return size_t(r * map_rows / rows) * map_cols + size_t(c * map_cols / cols);
  }
};

Grid make_grid(int64_t rows, int64_t cols) {
  Grid g{rows,
         cols,
         int(std::min<int64_t>(kMapRows, rows)),
         int(std::min<int64_t>(kMapCols, cols)),
         {}};
  g.count.assign(g.cells(), 0);
  for (int cr = 0; cr < g.map_rows; ++cr) {
    int64_t r_lo = (int64_t(cr) * rows + g.map_rows - 1) / g.map_rows;
    int64_t r_hi = (int64_t(cr + 1) * rows + g.map_rows - 1) / g.map_rows;
    for (int cc = 0; cc < g.map_cols; ++cc) {
      int64_t c_lo = (int64_t(cc) * cols + g.map_cols - 1) / g.map_cols;
      int64_t c_hi = (int64_t(cc + 1) * cols + g.map_cols - 1) / g.map_cols;
      g.count[size_t(cr) * g.map_cols + cc] = (r_hi - r_lo) * (c_hi - c_lo);
    }
  }
  return g;
}

// Element i (row r, column c): whether it passes; *m describes it, *pt gathers its errors.
bool check_element(const Comparison& k, int64_t r, int64_t c, int64_t i, Mismatch* m, Partial* pt) {
  const DType t = k.t;
  const uint32_t code = element_code(t, k.got, i);
  bool unwritten;
  if (k.nan_poison) {
    unwritten = code == poison_code(t, k.poison, i);
  } else {
    unwritten = k.second && code == poison_code(t, k.poison, i) &&
                element_code(t, k.second, i) == poison_code(t, k.second_poison, i);
  }
  *m = Mismatch{r, c, 0, 0, false, 0, code, unwritten, std::numeric_limits<double>::infinity()};
  if (k.exact) {
    const uint32_t want = element_code(t, k.expected.bytes.data(), i);
    bool ok = !unwritten && code == want;
    if (!ok && k.has_ties && !unwritten && k.expected.tie[size_t(i)]) {
      for (const std::vector<uint8_t>& alt : k.expected.alternatives) {
        if (code == element_code(t, alt.data(), i)) {
          ok = true;
          ++pt->ties;
          break;
        }
      }
    }
    m->codes = true;
    m->expected_code = want;
    m->expected = element_value(t, k.expected.bytes.data(), i);
    m->got = element_value(t, k.got, i);
    return ok;
  }
  const double g = element_value(t, k.got, i);
  const double ref = k.expected.values[size_t(i)];
  m->expected = ref;
  m->got = g;
  if (unwritten || !std::isfinite(g)) return false;
  const double abs_err = std::fabs(g - ref);
  const bool ulp = k.cmp.kind == CompareKind::kUlp;
  const double allowed =
      ulp ? double(k.cmp.max_ulp) * ulp_at(t, ref) : k.tol.atol + k.tol.rtol * std::fabs(ref);
  pt->max_abs = std::max(pt->max_abs, abs_err);
  if (ref != 0) pt->max_rel = std::max(pt->max_rel, abs_err / std::fabs(ref));
  m->excess =
      allowed > 0 ? abs_err / allowed : (abs_err > 0 ? std::numeric_limits<double>::infinity() : 0);
  pt->max_excess = std::max(pt->max_excess, m->excess);
  return ulp ? abs_err <= allowed : within_tolerance(g, ref, k.tol);
}

// Whether row r of an exact comparison passes whole because its bytes are the oracle's: then
// check_element would pass every element of it and count nothing (an exact element touches
// only the tie count, and only where its code differs). Not where an element can be judged
// unwritten although it equals the answer (a NaN poison, or a repeated call), nor for a row
// that does not start and end on a byte.
bool row_is_the_answer(const Comparison& k, int64_t r, int64_t cols) {
  if (!k.exact || k.nan_poison || k.second) return false;
  const int64_t per_unit = dtype_elements_per_unit(k.t);
  if (cols % per_unit != 0) return false;
  const size_t len = size_t(cols / per_unit) * dtype_bytes(k.t);
  const size_t off = size_t(r) * len;
  return std::memcmp(k.got + off, k.expected.bytes.data() + off, len) == 0;
}

// Rows [r0, r1) of the output into *pt.
void check_rows(const Comparison& k, const Grid& grid, int64_t r0, int64_t r1, Partial* pt) {
  for (int64_t r = r0; r < r1; ++r) {
    if (row_is_the_answer(k, r, grid.cols)) continue;
    for (int64_t c = 0; c < grid.cols; ++c) {
      Mismatch m;
      if (check_element(k, r, c, r * grid.cols + c, &m, pt)) continue;
      ++pt->mismatches;
      if (m.unwritten) {
        ++pt->unwritten;
      } else if (!k.exact && !std::isfinite(m.got)) {
        ++pt->nonfinite;
      }
      const size_t cell = grid.cell_of(r, c);
      ++pt->cell_fail[cell];
      Cell& w = pt->cell_worst[cell];
      if (!w.set || worse(m, w.m)) w = Cell{m, true};
    }
  }
}

void merge(const Partial& pt, Partial* total) {
  total->mismatches += pt.mismatches;
  total->nonfinite += pt.nonfinite;
  total->unwritten += pt.unwritten;
  total->ties += pt.ties;
  total->max_abs = std::max(total->max_abs, pt.max_abs);
  total->max_rel = std::max(total->max_rel, pt.max_rel);
  total->max_excess = std::max(total->max_excess, pt.max_excess);
  for (size_t k = 0; k < pt.cell_fail.size(); ++k) {
    total->cell_fail[k] += pt.cell_fail[k];
    Cell& w = total->cell_worst[k];
    if (pt.cell_worst[k].set && (!w.set || worse(pt.cell_worst[k].m, w.m))) {
      w = pt.cell_worst[k];
    }
  }
}

// What a failing element of comparison `cmp` is, in words.
std::string rule_text(const CompareSpec& cmp) {
  switch (cmp.kind) {
    case CompareKind::kTolerance: {
      std::ostringstream r;
      r << "outside atol " << cmp.atol << " + rtol " << cmp.rtol;
      return r.str();
    }
    case CompareKind::kUlp:
      return "outside " + std::to_string(cmp.max_ulp) + " ulp";
    case CompareKind::kExact:
      return "differ from the oracle's codes";
    case CompareKind::kExactOrTie:
      return "differ from the oracle's codes (and from the other neighbour where a tie is marked)";
  }
  return "";
}

std::string tile_map(const std::string& name, const Grid& g, const Partial& total) {
  std::ostringstream map;
  map << "failing tiles of '" << name << "' (" << g.map_rows << " x " << g.map_cols << " grid over "
      << g.rows << " x " << g.cols << "; '.' all pass, 'x' some fail, '#' all fail):\n";
  for (int cr = 0; cr < g.map_rows; ++cr) {
    map << "  ";
    for (int cc = 0; cc < g.map_cols; ++cc) {
      size_t k = size_t(cr) * g.map_cols + cc;
      int64_t f = total.cell_fail[k];
      map << (f == 0 ? '.' : f >= g.count[k] ? '#' : 'x');
    }
    map << "\n";
  }
  return map.str();
}

// The report's figures, worst elements, summary and (when failing) tile map from `total`.
void fill_report(const ParamSpec& p, bool exact, const Grid& grid, const Partial& total,
                 OutputReport* res) {
  res->mismatches = total.mismatches;
  res->nonfinite = total.nonfinite;
  res->unwritten = total.unwritten;
  res->ties = total.ties;
  res->max_abs_err = total.max_abs;
  res->max_rel_err = total.max_rel;
  res->max_excess = total.max_excess;
  for (const Cell& c : total.cell_worst) {
    if (c.set) res->worst.push_back(c.m);
  }
  std::sort(res->worst.begin(), res->worst.end(), worse);
  if (res->worst.size() > kWorst) res->worst.resize(kWorst);
  res->passed = res->mismatches == 0;
  std::ostringstream s;
  if (res->passed) {
    s << "'" << p.name << "': all " << res->elements << " elements pass";
    if (!exact) s << " (max abs err " << res->max_abs_err << ")";
    if (res->ties) s << "; " << res->ties << " ties took the other neighbour";
    res->summary = s.str();
    return;
  }
  s << "'" << p.name << "': " << res->mismatches << " of " << res->elements << " elements "
    << rule_text(p.compare);
  if (res->unwritten) s << "; " << res->unwritten << " never written";
  if (res->nonfinite) s << "; " << res->nonfinite << " NaN/Inf";
  res->summary = s.str();
  res->tile_map = tile_map(p.name, grid, total);
}

}  // namespace

OutputReport compare_output(const ParamSpec& p, int64_t rows, int64_t cols, const uint8_t* got,
                            Poison poison, const uint8_t* second, Poison second_poison,
                            const ExpectedOutput& expected) {
  OutputReport res;
  res.name = p.name;
  res.kind = p.compare.kind;
  res.elements = rows * cols;
  if (res.elements <= 0) {
    res.passed = true;
    res.summary = "no elements";
    return res;
  }
  const CompareSpec& cmp = p.compare;
  const bool exact = cmp.kind == CompareKind::kExact || cmp.kind == CompareKind::kExactOrTie;
  const Comparison k{p.dtype,
                     cmp,
                     Tolerance{cmp.atol, cmp.rtol},
                     dtype_has_nan_poison(p.dtype),
                     exact,
                     cmp.kind == CompareKind::kExactOrTie && !expected.tie.empty(),
                     got,
                     poison,
                     second,
                     second_poison,
                     expected};
  const Grid grid = make_grid(rows, cols);
  std::mutex mu;
  Partial total;
  total.cell_fail.assign(grid.cells(), 0);
  total.cell_worst.assign(grid.cells(), Cell{});
  parallel_for(rows, [&](int64_t r0, int64_t r1) {
    Partial pt;
    pt.cell_fail.assign(grid.cells(), 0);
    pt.cell_worst.assign(grid.cells(), Cell{});
    check_rows(k, grid, r0, r1, &pt);
    std::lock_guard<std::mutex> lock(mu);
    merge(pt, &total);
  });
  fill_report(p, exact, grid, total, &res);
  return res;
}

bool check_expected(const ParamSpec& p, int64_t elements, size_t bytes, const ExpectedOutput& e,
                    std::string* err) {
  const bool exact =
      p.compare.kind == CompareKind::kExact || p.compare.kind == CompareKind::kExactOrTie;
  if (exact) {
    if (e.bytes.size() != bytes) {
      *err = "the oracle gave " + std::to_string(e.bytes.size()) + " bytes for '" + p.name +
             "', expected " + std::to_string(bytes);
      return false;
    }
    if (p.compare.kind == CompareKind::kExactOrTie && !e.tie.empty()) {
      bool sizes_ok = e.tie.size() == size_t(elements) && !e.alternatives.empty();
      for (const std::vector<uint8_t>& alt : e.alternatives) sizes_ok &= alt.size() == bytes;
      if (!sizes_ok) {
        *err =
            "the oracle's tie mask or alternative codes for '" + p.name + "' have the wrong size";
        return false;
      }
    }
    return true;
  }
  if (e.values.size() != size_t(elements)) {
    *err = "the oracle gave " + std::to_string(e.values.size()) + " values for '" + p.name +
           "', expected " + std::to_string(elements);
    return false;
  }
  const bool floating =
      p.dtype == DType::kFp16 || p.dtype == DType::kBf16 || p.dtype == DType::kFp32;
  const double limit = floating ? max_finite(p.dtype) : std::numeric_limits<double>::max();
  for (size_t i = 0; i < e.values.size(); ++i) {
    const float v = e.values[i];
    if (!std::isfinite(v) || std::fabs(v) > limit) {
      *err = "the oracle produced an expected value (" + std::to_string(v) + ") for '" + p.name +
             "' element " + std::to_string(i) + " outside the output type's range";
      return false;
    }
  }
  return true;
}

}  // namespace fp4arena
