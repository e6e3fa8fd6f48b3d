// --action dump: one case's inputs and the oracle's expected outputs as NumPy .npy files,
// with a case.json describing them and a load.py that loads them with NumPy (and, where
// PyTorch is installed, views them as tensors of the right dtype).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/challenge.h"
#include "harness/spec.h"

namespace fp4arena {

/// Writes into `dir` (created): `<param>.npy` for every input buffer (its spec shape, its
/// dtype's raw storage: bf16 as uint16 bits, FP8 and packed FP4 as uint8), for every output
/// `expected_<name>.npy` (float32 values for tolerance/ulp outputs; the exact expected
/// buffer for exact ones, plus `expected_<name>_tie.npy` and `expected_<name>_alternatives.npy`
/// (the alternatives stacked on a new first axis) where
/// the oracle marked ties), case.json (challenge, case, seed, dims, scalars, files) and
/// load.py. `*files` receives the names written. False + *err on any I/O error.
bool dump_case(const Spec& spec, const CaseSpec& c, uint64_t seed, const ProblemData& in,
               const Expected& expected, const std::string& dir, std::vector<std::string>* files,
               std::string* err);

}  // namespace fp4arena
