// The tolerance check (the one place it is written) and the failure report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fp4arena {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

/// |got - ref| <= atol + rtol * |ref|; NaN or Inf in `got` (or `ref`) never passes.
bool within_tolerance(double got, double ref, const Tolerance& tol);

/// IEEE binary16 bits to float, exactly (subnormals, infinities and NaN included).
float half_bits_to_float(uint16_t h);

/// The poison pattern written into every output element before a call: an all-ones NaN,
/// which a correct solution never produces from finite inputs.
constexpr uint16_t kHalfPoison = 0xFFFF;
constexpr uint32_t kFloatPoison = 0xFFFFFFFFu;

struct Mismatch {
  int64_t row = 0, col = 0;
  double expected = 0, got = 0;
  double excess = 0;  ///< |got - ref| / (atol + rtol*|ref|); inf for NaN/Inf
};

struct ValidationResult {
  bool passed = false;
  int64_t elements = 0;
  int64_t mismatches = 0;       ///< elements outside tolerance (non-finite and unwritten included)
  int64_t nonfinite = 0;        ///< NaN or Inf outputs (unwritten ones excluded)
  int64_t unwritten = 0;        ///< outputs still holding the poison pattern
  double max_abs_err = 0;       ///< over finite outputs
  double max_rel_err = 0;       ///< |got-ref|/|ref| over finite outputs with ref != 0
  std::vector<Mismatch> worst;  ///< the largest excesses, worst first (at most 8)
  std::string tile_map;         ///< text map of failing regions (empty when passed)
  std::string summary;          ///< one line
};

/// Checks an output of rows x cols elements of `elem_type` ("__half" or "float") against
/// the expected floats.
ValidationResult validate_output(const void* output, const std::string& elem_type,
                                 const std::vector<float>& expected, int64_t rows, int64_t cols,
                                 const Tolerance& tol);

}  // namespace fp4arena
