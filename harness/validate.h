// Output validation: the one place where an output is compared with the oracle, for every
// dtype and comparison kind, and the failure report (worst elements in distinct tiles, a
// tile map, error as a fraction of what is allowed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/challenge.h"
#include "harness/spec.h"

namespace fp4arena {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

/// |got - ref| <= atol + rtol * |ref|; NaN or Inf in `got` (or `ref`) never passes.
bool within_tolerance(double got, double ref, const Tolerance& tol);

/// IEEE binary16 bits to float, exactly (subnormals, infinities and NaN included).
float half_bits_to_float(uint16_t h);
/// bfloat16 bits to float, exactly.
float bf16_bits_to_float(uint16_t h);

/// Raw bits of element `i` of a buffer of `t` (a nibble for e2m1x2).
uint32_t element_code(DType t, const uint8_t* data, int64_t i);
/// Value of element `i` (decoded for floating and FP8/FP4 types; NaN codes give NaN).
double element_value(DType t, const uint8_t* data, int64_t i);

/// The poison written into an output before a call. NaN-capable types always get their
/// all-ones NaN; others get `byte` in every byte (the judge draws it at random per call).
struct Poison {
  uint8_t byte = 0xFF;
};

struct Mismatch {
  int64_t row = 0, col = 0;
  double expected = 0, got = 0;
  bool codes = false;  ///< exact comparisons: the codes below are what differ
  uint32_t expected_code = 0, got_code = 0;
  bool unwritten = false;
  double excess = 0;  ///< error / allowed error (tolerance, ulp); inf for NaN, unwritten, codes
};

/// The comparison of one output.
struct OutputReport {
  std::string name;
  CompareKind kind = CompareKind::kTolerance;
  bool passed = false;
  int64_t elements = 0;
  int64_t mismatches = 0;       ///< failing elements (non-finite and unwritten included)
  int64_t nonfinite = 0;        ///< NaN or Inf outputs (unwritten ones excluded)
  int64_t unwritten = 0;        ///< outputs the solution never wrote
  int64_t ties = 0;             ///< exact_or_tie: elements accepted as the tie's other neighbour
  double max_abs_err = 0;       ///< over finite outputs (tolerance, ulp)
  double max_rel_err = 0;       ///< |got-ref|/|ref| over finite outputs with ref != 0
  double max_excess = 0;        ///< worst error as a fraction of the allowed error (finite ones)
  std::vector<Mismatch> worst;  ///< at most 8, worst first, each from a different tile
  std::string tile_map;         ///< text map of failing regions (empty when passed)
  std::string summary;          ///< one line
};

/// Compares output `p` (rows x cols elements, see output_matrix()) with the oracle.
/// `got` holds the output of a call made with `poison`. For dtypes without a NaN, `second`
/// (may be null) is the output of the same call repeated with `second_poison`: an element
/// equal to the poison in both is unwritten; without it, unwritten elements of such types
/// show up only as mismatches.
OutputReport compare_output(const ParamSpec& p, int64_t rows, int64_t cols, const uint8_t* got,
                            Poison poison, const uint8_t* second, Poison second_poison,
                            const ExpectedOutput& expected);

/// Checks that the oracle's answer has what output `p`'s comparison needs, of the right
/// sizes, and that tolerance/ulp values are finite and representable in the output dtype.
bool check_expected(const ParamSpec& p, int64_t elements, size_t bytes, const ExpectedOutput& e,
                    std::string* err);

}  // namespace fp4arena
