// One judged case as typed values: what the judge's steps hand each other (the case runners,
// the score, the sweep, the console reporter), and their one JSON form, written into the
// submit record (read back by harness/record.h) and the outcome.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/spec.h"
#include "harness/timing.h"
#include "harness/validate.h"
#include "harness/verdict.h"

namespace fp4arena {

/// How long the judge waits for the worker to queue a window's calls before it opens the
/// window anyway (a solve() that waits for the device cannot return before the go word).
constexpr double kQueueWaitSeconds = 0.5;

/// The same-run comparison timed in the judge's own process beside a benchmark case.
struct YardstickResult {
  std::string name;  ///< Challenge::yardstick_name()
  int calls_per_sample = 0;
  TimingStats stats;  ///< per call, in ms
  double value = 0;   ///< in the spec's metric unit
  /// The case's value over the yardstick's; none where the case has no value (a sweep times
  /// the yardstick on the shapes a solution failed too).
  std::optional<double> ratio;
};

/// What every judged case has: which case, its verdict and the comparison behind it.
struct CaseResult {
  std::string name;
  uint64_t seed = 0;
  std::map<std::string, int64_t> dims;
  Verdict verdict = Verdict::kNotRun;
  std::string reason;  ///< empty when passed
  /// A test: every output's comparison (empty when not run). A benchmark: the failing call's
  /// (empty when passed).
  std::vector<OutputReport> outputs;
  double wall_ms = 0;
  bool passed() const { return verdict == Verdict::kPassed; }
};

/// A test case: one call on one input set, every output compared with the oracle.
struct TestResult : CaseResult {};

/// Where a benchmark's wall time went on the judge's side, in seconds (a diagnostic, never
/// ranked): making the input sets, the windows' exchanges with the worker (delivery, the
/// calls, read-back and integrity checks), checking every output against the oracle, and
/// timing the yardstick.
struct JudgeCost {
  double generate_s = 0, exchange_s = 0, check_s = 0, yardstick_s = 0;
};

/// A benchmark case: windows of calls timed by the judge's clock, every call's outputs
/// checked. `ran` false: the case never started (the judge had already failed): only the
/// name, seed, dims, workload, verdict and reason mean anything.
struct BenchmarkResult : CaseResult {
  double workload = 0;  ///< FLOPs or bytes of one call (the spec's metric)
  bool ran = false;
  int calls = 0;             ///< calls timed and checked, warm-up excluded
  int calls_per_sample = 0;  ///< calls in each timed window
  TimingStats stats;         ///< the judge's per-call time of each window, in ms
  StopReason stopped = StopReason::kNone;
  WindowClock window_median;      ///< the windows' parts (medians), on the judge's events
  WindowCalibration calibration;  ///< the judge's calibration of this worker
  double delivery_model_ms = 0, snapshot_model_ms = 0;  ///< the last window's copy models
  double worker_reported_median_ms = 0;  ///< the worker's own events: a diagnostic, never ranked
  double host_call_median_ms = 0;        ///< solve()'s time on the host per call (median)
  int synchronising_windows = 0;         ///< windows in which solve() did not return in time
  std::optional<double> value;           ///< the metric's value; only when passed
  std::optional<double> pct_of_limit;    ///< 100 * value / the device's limit, where both exist
  int sm_clock_after_mhz = -1;           ///< the SM clock read after the case (-1: unknown)
  SpeedOfLight speed_of_light;           ///< ms 0: no roofline known for this case
  std::optional<YardstickResult> yardstick;
  JudgeCost judge_cost;
  /// 100 * speed of light / median, for a passed case with a roofline.
  std::optional<double> pct_of_speed_of_light() const;
};

/// The JSON forms, field names as in docs/judging.md's record schema.
nlohmann::json to_json(const OutputReport& o);
nlohmann::json to_json(const YardstickResult& y);
nlohmann::json to_json(const TestResult& t);
nlohmann::json to_json(const BenchmarkResult& b);

}  // namespace fp4arena
