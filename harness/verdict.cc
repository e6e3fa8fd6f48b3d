#include "harness/verdict.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace fp4arena {
namespace {

struct Name {
  Verdict v;
  const char* name;
};

constexpr Name kNames[] = {
    {Verdict::kPassed, "passed"},
    {Verdict::kWrongAnswer, "wrong_answer"},
    {Verdict::kOutOfBoundsWrite, "out_of_bounds_write"},
    {Verdict::kInputModified, "input_modified"},
    {Verdict::kTimingEscape, "timing_escape"},
    {Verdict::kThreadEscape, "thread_escape"},
    {Verdict::kTimingMismatch, "timing_mismatch"},
    {Verdict::kCrashed, "crashed"},
    {Verdict::kCudaError, "cuda_error"},
    {Verdict::kTimeout, "timeout"},
    {Verdict::kEarlyExit, "early_exit"},
    {Verdict::kNotRun, "not_run"},
};

std::string fmt0(double v) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(0) << v;
  return os.str();
}

std::string fmt3(double v) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(3) << v;
  return os.str();
}

std::string fmt1(double v) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << v;
  return os.str();
}

}  // namespace

const char* verdict_name(Verdict v) {
  for (const Name& n : kNames) {
    if (n.v == v) return n.name;
  }
  return "?";
}

bool parse_verdict(const std::string& name, Verdict* out) {
  for (const Name& n : kNames) {
    if (name == n.name) {
      *out = n.v;
      return true;
    }
  }
  return false;
}

bool is_runtime_failure(Verdict v) {
  return v == Verdict::kCrashed || v == Verdict::kCudaError || v == Verdict::kTimeout ||
         v == Verdict::kEarlyExit;
}

Decision decide_verdict(const CallFacts& f) {
  switch (f.end) {
    case CallEnd::kOk:
      break;
    case CallEnd::kCudaError:
      return {Verdict::kCudaError, f.end_detail};
    case CallEnd::kCrashed:
      return {Verdict::kCrashed, "the worker running solve() was " + f.end_detail};
    case CallEnd::kEarlyExit:
      return {Verdict::kEarlyExit, "the worker " + f.end_detail + " while solve() was running"};
    case CallEnd::kTimeout:
      return {Verdict::kTimeout, "solve() gave " + f.end_detail};
    case CallEnd::kWorkerError:
      return {Verdict::kCrashed, "the worker failed: " + f.end_detail};
  }
  if (!f.canary_broken.empty()) {
    return {Verdict::kOutOfBoundsWrite, "solve() wrote " + f.canary_broken};
  }
  if (!f.input_changed.empty()) {
    return {Verdict::kInputModified, "solve() modified its input " + f.input_changed};
  }
  if (f.threads_after > f.threads_before && !f.under_tool) {
    return {Verdict::kThreadEscape, "solve() returned with " +
                                        std::to_string(f.threads_after - f.threads_before) +
                                        " thread(s) it started still running"};
  }
  const double escape_limit = std::max(kEscapeMinUs, kEscapeFraction * f.event_ms * 1000.0);
  if (f.busy_after_us > escape_limit && !f.under_tool) {
    return {Verdict::kTimingEscape,
            "the GPU stayed busy for " + fmt0(f.busy_after_us) +
                " us after the launch stream finished (" + fmt0(f.event_ms * 1000.0) +
                " us timed): work was left running outside the default stream"};
  }
  if (f.judge_wall_ms > 0 && f.event_ms > f.judge_wall_ms + kClockSlackMs) {
    return {Verdict::kTimingMismatch, "the worker reported " + fmt3(f.event_ms) +
                                          " ms of device time for a call the judge's clock saw "
                                          "take " +
                                          fmt3(f.judge_wall_ms) + " ms in all"};
  }
  if (f.outputs_checked && !f.outputs_ok) return {Verdict::kWrongAnswer, f.outputs_summary};
  return {Verdict::kPassed, ""};
}

double allowed_overhead_ms(double overhead_ms, double start_overhead_ms) {
  return start_overhead_ms > 0 ? std::min(overhead_ms, start_overhead_ms + kOverheadCapMs)
                               : overhead_ms;
}

Decision check_benchmark_clock(double median_event_ms, double median_wall_ms, double overhead_ms,
                               double start_overhead_ms) {
  const double measured_overhead_ms = overhead_ms;
  overhead_ms = allowed_overhead_ms(overhead_ms, start_overhead_ms);
  if (median_event_ms > median_wall_ms + kClockSlackMs) {
    return {Verdict::kTimingMismatch, "the median reported device time " + fmt3(median_event_ms) +
                                          " ms exceeds the judge's median round trip " +
                                          fmt3(median_wall_ms) + " ms"};
  }
  const double margin = std::max(kWallMarginMs, kWallMarginFraction * median_wall_ms);
  const double floor = median_wall_ms - overhead_ms - margin;
  if (median_event_ms < floor) {
    return {Verdict::kTimingMismatch,
            "the median reported device time " + fmt3(median_event_ms) +
                " ms is below what the judge's clock allows: median round trip " +
                fmt3(median_wall_ms) + " ms - calibrated overhead " + fmt3(overhead_ms) +
                (overhead_ms < measured_overhead_ms
                     ? " (the " + fmt3(measured_overhead_ms) +
                           " ms measured beside the calls, capped at the start calibration + " +
                           fmt3(kOverheadCapMs) + " ms)"
                     : std::string()) +
                " ms - margin " + fmt3(margin) +
                " ms (forged times, or solve() spends that long on the host or synchronising)"};
  }
  return {Verdict::kPassed, ""};
}

double device_clock_ms(const WindowClock& call, const WindowClock& empty, double delivery_model_ms,
                       double snapshot_model_ms) {
  auto excess = [](double part, double empty_part, double model_ms) {
    return std::max(0.0, part - (empty_part + kCopyAllowance * model_ms + kCopySlackMs));
  };
  return call.device_ms - empty.device_ms + excess(call.pre_ms, empty.pre_ms, delivery_model_ms) +
         excess(call.post_ms, empty.post_ms, snapshot_model_ms);
}

double device_margin_ms(double device_ms) {
  return std::max(kDeviceMarginMs, kDeviceMarginFraction * device_ms);
}

Decision check_device_clock(double median_event_ms, double median_device_ms) {
  const double margin = device_margin_ms(median_device_ms);
  if (median_event_ms < median_device_ms - margin) {
    return {Verdict::kTimingMismatch,
            "the median reported device time " + fmt3(median_event_ms) +
                " ms is below what the judge's device clock measured: " + fmt3(median_device_ms) +
                " ms of GPU time between its own events, less an empty window's, with a margin "
                "of " +
                fmt3(margin) +
                " ms (forged times, or work the call left to run outside its "
                "events)"};
  }
  return {Verdict::kPassed, ""};
}

Score compute_score(const std::vector<double>& values, int cases_total, int cases_passed,
                    double limit, const std::string& limit_name, const std::string& unit) {
  Score s;
  const bool all_passed = cases_passed == cases_total && cases_total > 0;
  if (!all_passed) {
    s.reason = std::to_string(cases_total - cases_passed) + " of " + std::to_string(cases_total) +
               " cases failed";
    return s;
  }
  if (values.empty()) {
    s.reason = "no benchmark case was run";
    return s;
  }
  double log_sum = 0;
  double worst = 0;
  for (double v : values) {
    if (!(v > 0) || !std::isfinite(v)) {
      s.reason = "a benchmark has no positive finite figure";
      return s;
    }
    log_sum += std::log(v);
    worst = std::max(worst, v);
  }
  s.geomean = std::exp(log_sum / double(values.size()));
  if (limit > 0 && worst > limit) {
    s.reason = "over_limit: a benchmark reached " + fmt1(worst) + " " + unit +
               ", above the device's " + limit_name + " limit of " + fmt1(limit) + " " + unit +
               ", which no correct solution can";
    return s;
  }
  s.valid = true;
  return s;
}

}  // namespace fp4arena
