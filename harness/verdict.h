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
  /// The judge's own time per call of the window (0: not timed); the escape threshold's
  /// scale.
  double judge_call_ms = 0;
  /// The two context switches between the judge and the worker, as the judge calibrated them
  /// (WindowCalibration::switch_ms, in us): allowed on top of the escape threshold.
  double switch_us = 0;
  /// Device busy after the worker's stop event, once the judge's window was over (the
  /// worker's word: it can only earn a verdict, never excuse time).
  double busy_after_us = 0;
  bool under_tool = false;  ///< compute-sanitizer / ncu: thread and timing checks are off
  // Answer.
  bool outputs_checked = false;
  bool outputs_ok = false;
  std::string outputs_summary;  ///< the first failing output's summary
};

/// Device work the worker says was still running after its stop event, once the judge's
/// window had ended, beyond max(kEscapeMinUs, kEscapeFraction of the call as the judge timed
/// it) plus kEscapeSwitches times the calibrated pair of context switches is a timing escape.
/// Honest solutions read up to about one pair (H100: 79-288 us against a calibrated 280 us),
/// from the worker's context being switched back in for its wait.
constexpr double kEscapeMinUs = 50;
constexpr double kEscapeFraction = 0.05;
constexpr double kEscapeSwitches = 2;

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

/// How a window's copies are modelled and its outputs poisoned. kV1: one copy model, the copy
/// kernel over 4 KiB and one 256 MiB segment of the judge's own memory (CallWindow::init);
/// outputs poisoned before the window. kV2: copy models measured in windows of the worker's
/// own buffers before the solution is loaded (delivery_model_from, snapshot_model_from), no
/// window delivering more than the largest of them did, and every output poisoned again
/// inside the window as part of the delivery, so that nothing the worker writes into an
/// output before the window survives into it.
enum class WindowMethod { kV1, kV2 };

/// "judge-window-v1" or "judge-window-v2": a record's "timing_method".
constexpr const char* window_method_name(WindowMethod m) {
  return m == WindowMethod::kV1 ? "judge-window-v1" : "judge-window-v2";
}

/// The judge's window method, the one place that chooses it: submit and sweep use no other,
/// and the board ranks records of this method only. kV2 since judge 0.4: on an H200 its figure
/// for every challenge's best rung was within max(1 us, 2%) of the same calls timed in one
/// process, where kV1 charged up to 25 us a call (docs/development.md, 2026-12-02). kV1 stays
/// for library callers (tests/bench compare the two). Changing it is this line, a new judge
/// series and every record submitted again.
constexpr WindowMethod kJudgeWindowMethod = WindowMethod::kV2;

/// The timing method of every figure this judge writes (records say it as "timing_method";
/// the board ranks records of one method only): each sample is a window of back-to-back calls
/// timed by the judge's own events (harness/call_window.h, window_call_ms below).
constexpr const char* kTimingMethod = window_method_name(kJudgeWindowMethod);

/// What a copy kernel of the judge's takes (ms) for `copied` bytes copied and `filled`
/// bytes filled, beyond the empty window's part it is measured against.
struct CopyModel {
  double fixed_ms = 0;
  double ms_per_byte = 0;       ///< per byte copied
  double ms_per_fill_byte = 0;  ///< per byte filled (an output's poison)
  double predict(double copied, double filled) const {
    return fixed_ms + copied * ms_per_byte + filled * ms_per_fill_byte;
  }
};

/// One kind of model window (WindowMethod::kV2): `sets` sets of `copied` input bytes and
/// `filled` output bytes each (`snapshot` bytes of each set copied out after the calls), and
/// the medians of its delivery and snapshot parts (WindowClock's pre_ms and post_ms), in ms.
struct ModelWindow {
  int sets = 0;
  double copied = 0, filled = 0, snapshot = 0;
  double delivery_ms = 0, snapshot_ms = 0;
};

/// The delivery's model from three model windows' delivery parts, less `empty_ms` (the
/// calibrated empty window's): `one` of one set, `many` of more sets of the same buffers, and
/// `inputs_only` of as many sets of the inputs alone. The per-byte costs come from their
/// differences (copied and filled bytes apart); the fixed cost is what is left of `one`.
/// Negative parts (noise) are taken as zero. False + *err when the windows cannot tell the
/// costs apart (fewer than two sets in `many`, no copied or filled bytes, or `inputs_only`
/// not the sets of `many`).
bool delivery_model_from(const ModelWindow& one, const ModelWindow& many,
                         const ModelWindow& inputs_only, double empty_ms, CopyModel* out,
                         std::string* err);

/// The snapshot's model from the snapshot parts of `one` and `many` (as above), less
/// `empty_ms`. False + *err when `many` has fewer than two sets or no snapshot bytes.
bool snapshot_model_from(const ModelWindow& one, const ModelWindow& many, double empty_ms,
                         CopyModel* out, std::string* err);

/// One call window on the GPU timeline (harness/call_window.h), in ms, between the judge's
/// own events E0..E3 in its own context.
struct WindowClock {
  double pre_ms = 0;   ///< E0..E1: every set's inputs delivered, the L2 flush
  double call_ms = 0;  ///< E1..E2: go word, the worker's calls, its done word
  double post_ms = 0;  ///< E2..E3: every set's outputs copied to judge-only memory
};

/// What the judge measured of its own window before any user code was loaded (medians).
struct WindowCalibration {
  /// call_ms less the calls: the GPU's two switches between the judge's context and the
  /// worker's (the worker ran its own null kernel in these windows; see switch_ms_from()).
  double switch_ms = 0;
  /// call_ms of windows whose worker ran no kernel at all (no switch needed): a diagnostic.
  double memops_ms = 0;
  /// The interquartile range of the rounds' switch estimates, one per round of one and nine
  /// null kernels (switch_spread_ms()): near zero on a GPU the judge has alone.
  double switch_spread_ms = 0;
  double pre_ms = 0, post_ms = 0;  ///< an empty window's other parts (no copies)
};

/// The switch cost from windows of one null kernel (w1) and of nine (w9): the kernels' own
/// time cancels, (9 * w1 - w9) / 8.
double switch_ms_from(double w1_ms, double w9_ms);

/// The interquartile range of switch_ms_from(one[i], nine[i]) over the calibration's rounds.
double switch_spread_ms(const std::vector<double>& one, const std::vector<double>& nine);

/// Another context's work on the GPU time-slices with the judge's windows: a null kernel
/// waits for the other context's slice (about 2 ms; an H200 shared by two judges calibrated
/// 2.587 ms where it calibrates 0.294 ms alone). Subtracting such a calibration would make
/// every call look faster than it ran, and an honest call shorter than it impossible
/// (timing_mismatch). A calibration whose switches exceed kMaxSwitchMs, or whose rounds
/// disagree by more than kMaxSwitchSpreadMs, is not used: the judge calibrates again, up to
/// kCalibrationTries times, kCalibrationRetrySeconds apart; if every try is doubtful the
/// tests still run (they time nothing) and the run stops before its first timed window.
constexpr double kMaxSwitchMs = 1.0;
constexpr double kMaxSwitchSpreadMs = 0.1;
constexpr int kCalibrationTries = 3;
constexpr double kCalibrationRetrySeconds = 0.5;

/// Why `cal` cannot be used (the GPU is shared, see kMaxSwitchMs), or "" when it can.
std::string calibration_doubt(const WindowCalibration& cal);

/// How much longer than the calibrated empty part plus kModelSlack times the copy model,
/// plus kModelSlackMs, a window's delivery (with the flush) or snapshot may take before the
/// excess is charged to the calls: the worker's context can only lengthen them with work of
/// its own (time slicing), beside the delivery or past a done word written early.
constexpr double kModelSlack = 1.05;
constexpr double kModelSlackMs = 0.005;

/// The judge's time per call of one window of `calls` calls (ms): call_ms less the
/// calibrated switches, plus what pre_ms and post_ms took beyond their expectation (see
/// kModelSlack), over `calls`. The copy models are the window's own (CallWindow).
double window_call_ms(const WindowClock& w, const WindowCalibration& cal, double delivery_model_ms,
                      double snapshot_model_ms, int calls);

/// A window whose call part is shorter than the calibrated switches by more than this is
/// impossible for any work: timing_mismatch (window_check()).
constexpr double kSwitchMarginMs = 0.015;

/// timing_mismatch when `w.call_ms` < cal.switch_ms - kSwitchMarginMs: the window was
/// shorter than the two switches the judge subtracts, so its figure would be below zero
/// (the worker ran nothing on the GPU's compute engine, which needs no switch, or changed how
/// the switches run); passed otherwise. Applied to timed windows whose answers are right.
Decision window_check(const WindowClock& w, const WindowCalibration& cal);

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

/// Whether a run passed: it judged a case, every case passed and, when it timed a benchmark
/// (`timed`), its score is valid. A run that timed nothing (--action test, or a --case list of
/// test cases only) has no score, and its result is its tests'.
bool run_passed(int cases_passed, int cases_total, const Score& score, bool timed);

}  // namespace fp4arena
