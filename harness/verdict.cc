#include "harness/verdict.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "harness/text.h"

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
  const double escape_limit = std::max(kEscapeMinUs, kEscapeFraction * f.judge_call_ms * 1000.0) +
                              kEscapeSwitches * f.switch_us;
  if (f.busy_after_us > escape_limit && !f.under_tool) {
    return {Verdict::kTimingEscape,
            "the GPU stayed busy for " + fixed(f.busy_after_us, 0) +
                " us after the launch stream finished and the judge's window had ended (" +
                fixed(f.judge_call_ms * 1000.0, 0) +
                " us per call timed): work was left running outside the default stream"};
  }
  if (f.outputs_checked && !f.outputs_ok) return {Verdict::kWrongAnswer, f.outputs_summary};
  return {Verdict::kPassed, ""};
}

double switch_ms_from(double w1_ms, double w9_ms) {
  return (9 * w1_ms - w9_ms) / 8;
}

double switch_spread_ms(const std::vector<double>& one, const std::vector<double>& nine) {
  std::vector<double> rounds;
  for (size_t i = 0; i < std::min(one.size(), nine.size()); ++i) {
    rounds.push_back(switch_ms_from(one[i], nine[i]));
  }
  if (rounds.size() < 2) return 0;
  std::sort(rounds.begin(), rounds.end());
  auto at = [&](double q) {
    const double x = q * double(rounds.size() - 1);
    const size_t lo = size_t(std::floor(x));
    const size_t hi = std::min(rounds.size() - 1, lo + 1);
    return rounds[lo] + (x - double(lo)) * (rounds[hi] - rounds[lo]);
  };
  return at(0.75) - at(0.25);
}

std::string calibration_doubt(const WindowCalibration& cal) {
  if (cal.switch_ms <= kMaxSwitchMs && cal.switch_spread_ms <= kMaxSwitchSpreadMs) return "";
  return "the GPU is not the judge's alone: its two context switches calibrated at " +
         fixed(cal.switch_ms, 3) + " ms (rounds spread " + fixed(cal.switch_spread_ms, 3) +
         " ms; alone they take about 0.3 ms and agree within microseconds), so another "
         "process's work is time-sliced with the judge's windows and no time taken now would "
         "be the solution's. Stop the other GPU work (nvidia-smi lists it) or pick an idle "
         "GPU with --device";
}

bool delivery_model_from(const ModelWindow& one, const ModelWindow& many,
                         const ModelWindow& inputs_only, double empty_ms, CopyModel* out,
                         std::string* err) {
  if (many.sets < 2 || one.sets != 1 || inputs_only.sets != many.sets || one.copied <= 0 ||
      one.filled <= 0 || many.copied != one.copied || many.filled != one.filled ||
      inputs_only.copied != one.copied || inputs_only.filled != 0) {
    *err = "the delivery's model windows cannot tell its costs apart";
    return false;
  }
  const double n = many.sets;
  // many - inputs_only: n sets' fills alone; many - one: n - 1 sets' copies and fills.
  const double fill =
      std::max(0.0, (many.delivery_ms - inputs_only.delivery_ms) / (n * one.filled));
  const double per_set = (many.delivery_ms - one.delivery_ms) / (n - 1);
  const double copy = std::max(0.0, (per_set - one.filled * fill) / one.copied);
  out->ms_per_byte = copy;
  out->ms_per_fill_byte = fill;
  out->fixed_ms = std::max(0.0, one.delivery_ms - empty_ms - one.copied * copy - one.filled * fill);
  return true;
}

bool snapshot_model_from(const ModelWindow& one, const ModelWindow& many, double empty_ms,
                         CopyModel* out, std::string* err) {
  if (many.sets < 2 || one.sets != 1 || one.snapshot <= 0 || many.snapshot != one.snapshot) {
    *err = "the snapshot's model windows cannot tell its costs apart";
    return false;
  }
  const double per_byte =
      std::max(0.0, (many.snapshot_ms - one.snapshot_ms) / ((many.sets - 1) * one.snapshot));
  *out =
      CopyModel{std::max(0.0, one.snapshot_ms - empty_ms - one.snapshot * per_byte), per_byte, 0};
  return true;
}

double window_call_ms(const WindowClock& w, const WindowCalibration& cal, double delivery_model_ms,
                      double snapshot_model_ms, int calls) {
  auto excess = [](double part, double empty_part, double model_ms) {
    return std::max(0.0, part - (empty_part + kModelSlack * model_ms + kModelSlackMs));
  };
  const double charged = w.call_ms - cal.switch_ms +
                         excess(w.pre_ms, cal.pre_ms, delivery_model_ms) +
                         excess(w.post_ms, cal.post_ms, snapshot_model_ms);
  return charged / std::max(1, calls);
}

Decision window_check(const WindowClock& w, const WindowCalibration& cal) {
  if (w.call_ms < cal.switch_ms - kSwitchMarginMs) {
    return {Verdict::kTimingMismatch,
            "the judge's window closed " + fixed(w.call_ms, 3) +
                " ms after its go word, faster than the two context switches it calibrated "
                "before the solution was loaded (" +
                fixed(cal.switch_ms, 3) +
                " ms) allow: its calls ran nothing on the GPU's compute engine (work done by "
                "copies or on the host needs no switch), or it changed how the GPU switches "
                "between its context and the judge's"};
  }
  return {Verdict::kPassed, ""};
}

bool run_passed(int cases_passed, int cases_total, const Score& score, bool timed) {
  return cases_total > 0 && cases_passed == cases_total && (score.valid || !timed);
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
    s.reason = "over_limit: a benchmark reached " + fixed(worst, 1) + " " + unit +
               ", above the device's " + limit_name + " limit of " + fixed(limit, 1) + " " + unit +
               ", which no correct solution can";
    return s;
  }
  s.valid = true;
  return s;
}

}  // namespace fp4arena
