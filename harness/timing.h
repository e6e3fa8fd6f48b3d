// Timing statistics and the stopping rule of a benchmark (the one place they are computed).
#pragma once

#include <vector>

#include "harness/spec.h"

namespace fp4arena {

struct TimingStats {
  int samples = 0;
  double median_ms = 0, mean_ms = 0, std_ms = 0, min_ms = 0, max_ms = 0;
  double rse = 0;  ///< relative standard error of the mean: std / sqrt(n) / mean
};

/// Summary of per-call times in ms (sample standard deviation; median of an even count is
/// the mean of the two middle values).
TimingStats summarize(const std::vector<double>& ms);

/// True when sampling should stop: at least min_samples and the RSE is under target, or
/// max_samples reached, or `elapsed_seconds` is past the time cap (then at least one sample).
bool should_stop(const std::vector<double>& ms, const TimingSpec& t, double elapsed_seconds);

}  // namespace fp4arena
