// Timing statistics and the stopping rule of a benchmark (the one place they are computed).
#pragma once

#include <functional>
#include <string>
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

/// Why sampling stopped (or "" while it should go on).
enum class StopReason { kNone, kConverged, kMaxSamples, kTimeCap };
/// "converged", "max_samples", "time_cap" ("" for kNone).
const char* stop_reason_name(StopReason r);

/// Whether sampling should stop: at least min_samples and the RSE is under target
/// (kConverged), or max_samples reached (kMaxSamples), or `elapsed_seconds` is past the time
/// cap with at least one sample (kTimeCap, possibly before min_samples). kNone otherwise.
StopReason stop_reason(const std::vector<double>& ms, const TimingSpec& t, double elapsed_seconds);

/// stop_reason() != kNone.
bool should_stop(const std::vector<double>& ms, const TimingSpec& t, double elapsed_seconds);

/// One call of a timed loop: sets *ms to its time (false + *err to stop the loop).
/// `call` counts from 0; `warmup` calls are not sampled.
using TimedCall = std::function<bool(int call, bool warmup, double* ms, std::string* err)>;

struct SampleRun {
  bool ok = true;
  std::string error;                       ///< why the loop stopped early (from the call)
  int calls = 0;                           ///< warm-up calls included
  StopReason stopped = StopReason::kNone;  ///< why sampling ended (kNone: a call failed)
  std::vector<double> samples;             ///< ms of every sampled call, in order
  TimingStats stats;                       ///< summarize(samples)
};

/// The harness's one timing loop, for solutions and yardsticks alike: `timing.warmup_calls`
/// untimed calls, then sampled calls until should_stop() (the time cap counts from the first
/// sampled call). `after_call` (may be empty) is told after every call, for progress.
SampleRun sample_loop(const TimingSpec& timing, const TimedCall& call,
                      const std::function<void(const SampleRun&, bool warmup)>& after_call = {});

}  // namespace fp4arena
