// Verdicts and scoring as pure functions: which verdict a call gets from what the judge
// observed (the order in which checks win), and the score of a run. No I/O, no CUDA: unit
// tested on the CPU.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace fp4arena {

enum class Verdict {
  kPassed,
  kWrongAnswer,
  kOutOfBoundsWrite,
  kInputModified,
  kTimingEscape,
  kThreadEscape,
  kTimingMismatch,
  kCrashed,
  kCudaError,
  kTimeout,
  kEarlyExit,
  kNotRun,
};

/// "passed", "wrong_answer", ... (the names records and reports use).
const char* verdict_name(Verdict v);
/// Parses a verdict name; false for anything else.
bool parse_verdict(const std::string& name, Verdict* out);
/// crashed, cuda_error, timeout, early_exit: the worker is gone and the exit code is 4.
bool is_runtime_failure(Verdict v);

/// How the worker's call ended, seen from the judge (mirrors the worker client's outcome).
enum class CallEnd { kOk, kCudaError, kCrashed, kEarlyExit, kTimeout, kWorkerError };

/// Everything the judge observed about one call, in the order it can observe it.
struct CallFacts {
  CallEnd end = CallEnd::kOk;
  std::string end_detail;  ///< the cause in words where end != kOk
  // Integrity (only meaningful when end == kOk).
  std::string canary_broken;  ///< "past the end of 'c' (4096 bytes)"; empty when intact
  std::string input_changed;  ///< "'b_scales' (first changed byte at 3 of 512)"; empty if none
  int threads_before = 0, threads_after = 0;
  double event_ms = 0;       ///< the call's device time as measured (work after stop excluded)
  double busy_after_us = 0;  ///< device busy after the stop event
  /// The judge's own clock around the timed round trip (0: not measured). A reported
  /// device time longer than this by more than kClockSlackMs is impossible.
  double judge_wall_ms = 0;
  bool under_tool = false;  ///< compute-sanitizer / ncu: thread and timing checks are off
  // Answer.
  bool outputs_checked = false;
  bool outputs_ok = false;
  std::string outputs_summary;  ///< the first failing output's summary
};

/// Device work left running after the stop event beyond max(kEscapeMinUs, kEscapeFraction
/// of the call) is a timing escape.
constexpr double kEscapeMinUs = 50;
constexpr double kEscapeFraction = 0.05;

/// How much a reported device time may exceed the judge's own clock around the round trip
/// (the two clocks' granularity) before it is called a forgery.
constexpr double kClockSlackMs = 0.02;

/// A benchmark's median device time may fall short of the judge's median round trip minus
/// the calibrated overhead by at most max(kWallMarginMs, kWallMarginFraction of the round
/// trip): the host time of launching the work, which the events do not see.
constexpr double kWallMarginMs = 0.05;
constexpr double kWallMarginFraction = 0.10;

/// The overhead subtracted for a benchmark is measured on empty round trips that the worker
/// serves after the solution is loaded, so code in the worker could slow them to widen the
/// allowance. It is therefore capped at the overhead calibrated before the solution was
/// loaded plus this much (and plus the case's copy allowance, CallWindow). Honest runs on an
/// H200 (2026-11-23): with the judge's window (harness/call_window.h), eight benchmarks of
/// three challenges stayed within -0.07..+0.06 ms of a calibration of 0.74-0.82 ms; with the
/// worker's round trip alone, ten benchmarks of four challenges drifted 0.05-0.13 ms above
/// it, and before the channel spun (kChannelSpinMs) up to 0.36 ms (a 6 us kernel failed
/// this check).
constexpr double kOverheadCapMs = 0.25;

/// The judge's device clock (harness/call_window.h, device_clock_ms below): its window's GPU
/// time between its own device events, less an empty window's (calibrated before the
/// solution was loaded), is the device time of the worker's call as the judge saw it. On an
/// H200 (2026-11-23) the median reported event time of honest solutions (kernels of 0.016 to
/// 265 ms, one to three kernels) stayed within -20 to +13 us of it, once -39 us; the
/// difference is the two contexts' switches around the go and done words and the worker's
/// steps around its events, which vary from call to call. The margin covers that; it bounds
/// a forged time to 60 us (3% of long calls), where the host clock allows 0.3 to 0.5 ms.
constexpr double kDeviceMarginMs = 0.06;
constexpr double kDeviceMarginFraction = 0.03;

struct Decision {
  Verdict verdict = Verdict::kPassed;
  std::string reason;
};

/// The verdict of one call. The first that applies wins: how the call ended (crash, CUDA
/// error, timeout, exit), then out_of_bounds_write, input_modified, thread_escape,
/// timing_escape, timing_mismatch (a device time the judge's clock rules out), then
/// wrong_answer. Integrity verdicts come before the answer: a solution
/// that wrote out of bounds gets that verdict even when its output happens to be right.
Decision decide_verdict(const CallFacts& f);

/// The judge's clock against the worker's report over a whole benchmark (medians, in ms):
/// timing_mismatch when the reported device time is longer than the judge's round trip, or
/// shorter than the round trip minus the overhead and the margin above. The overhead is
/// `overhead_ms` (measured beside each timed call), but at most `start_overhead_ms` (measured
/// before the solution was loaded) + kOverheadCapMs where `start_overhead_ms` > 0. Passed
/// otherwise.
Decision check_benchmark_clock(double median_event_ms, double median_wall_ms, double overhead_ms,
                               double start_overhead_ms = 0);

/// The overhead check_benchmark_clock subtracts (see there).
double allowed_overhead_ms(double overhead_ms, double start_overhead_ms);

/// One call window on the GPU timeline (harness/call_window.h), in ms, from the judge's own
/// events.
struct WindowClock {
  double pre_ms = 0;     ///< the window's start to the end of its L2 flush (delivery, flush)
  double device_ms = 0;  ///< from there to the worker's done word (spin, go, the call)
  double post_ms = 0;    ///< from the done word to the end of the snapshot of the outputs
};

/// How much longer than an empty window's part plus kCopyAllowance times the device copy
/// model of its copies, plus kCopySlackMs, a window's delivery (with the flush) or snapshot
/// may take before the excess counts as the call's device time: the worker's context can
/// only lengthen them with work of its own, beside the delivery once the inputs may have
/// arrived, or past a done word written early.
constexpr double kCopyAllowance = 1.5;
constexpr double kCopySlackMs = 0.03;

/// The device time of one call as the judge's own events saw it (ms): `call.device_ms` less
/// `empty.device_ms` (an empty window's, calibrated before the solution was loaded), plus
/// whatever `call.pre_ms` and `call.post_ms` took beyond the empty window's part +
/// kCopyAllowance * the copy model (`delivery_model_ms`, `snapshot_model_ms`) +
/// kCopySlackMs.
double device_clock_ms(const WindowClock& call, const WindowClock& empty, double delivery_model_ms,
                       double snapshot_model_ms);

/// max(kDeviceMarginMs, kDeviceMarginFraction * device_ms).
double device_margin_ms(double device_ms);

/// The judge's device clock against the worker's report over a whole benchmark (medians, in
/// ms): timing_mismatch when the reported device time falls short of the device time the
/// judge measured (see kDeviceMarginMs) by more than device_margin_ms. Passed otherwise.
Decision check_device_clock(double median_event_ms, double median_device_ms);

/// The score of a run: the geometric mean of the benchmarks' metric values, valid only when
/// every case passed and no value exceeds the device's physical limit.
struct Score {
  std::optional<double> geomean;
  bool valid = false;
  std::string reason;  ///< why it is not valid; empty when valid
};

/// `values`: the metric value of every benchmark case run (all must have passed when
/// cases_passed == cases_total). `limit` <= 0 means the judge has no limit for the device.
Score compute_score(const std::vector<double>& values, int cases_total, int cases_passed,
                    double limit, const std::string& limit_name, const std::string& unit);

}  // namespace fp4arena
