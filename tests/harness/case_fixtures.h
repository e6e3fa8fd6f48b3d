// A failed benchmark result the case-result and reporter tests share.
#pragma once

#include <cmath>
#include <limits>

#include "harness/case_result.h"

namespace fp4arena::testing_util {

// rev1 at 4x8x64: a wrong answer with one NaN element, a tile map and a roofline.
inline BenchmarkResult failed_benchmark() {
  BenchmarkResult b;
  b.name = "rev1";
  b.dims = {{"M", 4}, {"N", 8}, {"K", 64}};
  b.ran = true;
  b.verdict = Verdict::kWrongAnswer;
  b.reason = "call 3 (seed 9): output c: 1 of 32 elements wrong";
  OutputReport o;
  o.name = "c";
  o.summary = "c: 1 of 32 elements wrong";
  o.worst.push_back(Mismatch{1, 2, 3.0, std::nan(""), false, 0, 0, false,
                             std::numeric_limits<double>::infinity()});
  o.tile_map = "tile map\nX.\n";
  b.outputs = {o};
  b.speed_of_light.ms = 0.01;
  return b;
}

}  // namespace fp4arena::testing_util
