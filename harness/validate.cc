#include "harness/validate.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <sstream>

#include "harness/parallel.h"

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

namespace {

constexpr int kMapRows = 16;
constexpr int kMapCols = 64;
constexpr size_t kWorst = 8;

struct Partial {
  int64_t mismatches = 0, nonfinite = 0, unwritten = 0;
  double max_abs = 0, max_rel = 0;
  std::vector<Mismatch> worst;
  std::vector<int64_t> cell_fail;  // per map cell
};

void keep_worst(std::vector<Mismatch>* v, const Mismatch& m) {
  if (v->size() < kWorst) {
    v->push_back(m);
    return;
  }
  auto least = std::min_element(v->begin(), v->end(), [](const Mismatch& a, const Mismatch& b) {
    return a.excess < b.excess;
  });
  if (m.excess > least->excess) *least = m;
}

}  // namespace

ValidationResult validate_output(const void* output, const std::string& elem_type,
                                 const std::vector<float>& expected, int64_t rows, int64_t cols,
                                 const Tolerance& tol) {
  ValidationResult res;
  res.elements = rows * cols;
  const int map_rows = static_cast<int>(std::min<int64_t>(kMapRows, rows));
  const int map_cols = static_cast<int>(std::min<int64_t>(kMapCols, cols));
  auto cell_of = [&](int64_t r, int64_t c) {
    return static_cast<int>(r * map_rows / rows) * map_cols + static_cast<int>(c * map_cols / cols);
  };
  const bool is_half = elem_type == "__half";
  std::mutex mu;
  Partial total;
  total.cell_fail.assign(size_t(map_rows) * map_cols, 0);
  std::vector<int64_t> cell_count(size_t(map_rows) * map_cols, 0);
  for (int cr = 0; cr < map_rows; ++cr) {
    int64_t r_lo = (int64_t(cr) * rows + map_rows - 1) / map_rows;
    int64_t r_hi = (int64_t(cr + 1) * rows + map_rows - 1) / map_rows;
    for (int cc = 0; cc < map_cols; ++cc) {
      int64_t c_lo = (int64_t(cc) * cols + map_cols - 1) / map_cols;
      int64_t c_hi = (int64_t(cc + 1) * cols + map_cols - 1) / map_cols;
      cell_count[size_t(cr) * map_cols + cc] = (r_hi - r_lo) * (c_hi - c_lo);
    }
  }

  parallel_for(rows, [&](int64_t r0, int64_t r1) {
    Partial p;
    p.cell_fail.assign(size_t(map_rows) * map_cols, 0);
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        int64_t i = r * cols + c;
        double got;
        bool poisoned;
        if (is_half) {
          uint16_t bits;
          std::memcpy(&bits, static_cast<const uint8_t*>(output) + 2 * i, 2);
          poisoned = bits == kHalfPoison;
          got = half_bits_to_float(bits);
        } else {
          uint32_t bits;
          std::memcpy(&bits, static_cast<const uint8_t*>(output) + 4 * i, 4);
          poisoned = bits == kFloatPoison;
          float f;
          std::memcpy(&f, &bits, 4);
          got = f;
        }
        double ref = expected[size_t(i)];
        if (within_tolerance(got, ref, tol)) {
          double abs_err = std::fabs(got - ref);
          p.max_abs = std::max(p.max_abs, abs_err);
          if (ref != 0) p.max_rel = std::max(p.max_rel, abs_err / std::fabs(ref));
          continue;
        }
        ++p.mismatches;
        ++p.cell_fail[size_t(cell_of(r, c))];
        Mismatch m{r, c, ref, got, std::numeric_limits<double>::infinity()};
        if (poisoned) {
          ++p.unwritten;
        } else if (!std::isfinite(got)) {
          ++p.nonfinite;
        } else {
          double abs_err = std::fabs(got - ref);
          p.max_abs = std::max(p.max_abs, abs_err);
          if (ref != 0) p.max_rel = std::max(p.max_rel, abs_err / std::fabs(ref));
          m.excess = abs_err / (tol.atol + tol.rtol * std::fabs(ref));
        }
        keep_worst(&p.worst, m);
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    total.mismatches += p.mismatches;
    total.nonfinite += p.nonfinite;
    total.unwritten += p.unwritten;
    total.max_abs = std::max(total.max_abs, p.max_abs);
    total.max_rel = std::max(total.max_rel, p.max_rel);
    for (const Mismatch& m : p.worst) keep_worst(&total.worst, m);
    for (size_t k = 0; k < p.cell_fail.size(); ++k) total.cell_fail[k] += p.cell_fail[k];
  });

  res.mismatches = total.mismatches;
  res.nonfinite = total.nonfinite;
  res.unwritten = total.unwritten;
  res.max_abs_err = total.max_abs;
  res.max_rel_err = total.max_rel;
  res.worst = total.worst;
  std::sort(res.worst.begin(), res.worst.end(), [](const Mismatch& a, const Mismatch& b) {
    if (a.excess != b.excess) return a.excess > b.excess;
    return a.row != b.row ? a.row < b.row : a.col < b.col;
  });
  res.passed = res.mismatches == 0;

  std::ostringstream s;
  if (res.passed) {
    s << "all " << res.elements << " elements within atol " << tol.atol << " + rtol " << tol.rtol
      << " (max abs err " << res.max_abs_err << ")";
    res.summary = s.str();
    return res;
  }
  s << res.mismatches << " of " << res.elements << " elements outside atol " << tol.atol
    << " + rtol " << tol.rtol;
  if (res.unwritten) s << "; " << res.unwritten << " never written";
  if (res.nonfinite) s << "; " << res.nonfinite << " NaN/Inf";
  res.summary = s.str();

  std::ostringstream map;
  map << "failing tiles (" << map_rows << " x " << map_cols << " grid over " << rows << " x "
      << cols << "; '.' all pass, 'x' some fail, '#' all fail):\n";
  for (int cr = 0; cr < map_rows; ++cr) {
    map << "  ";
    for (int cc = 0; cc < map_cols; ++cc) {
      size_t k = size_t(cr) * map_cols + cc;
      int64_t f = total.cell_fail[k];
      map << (f == 0 ? '.' : f >= cell_count[k] ? '#' : 'x');
    }
    map << "\n";
  }
  res.tile_map = map.str();
  return res;
}

}  // namespace fp4arena
