#include "harness/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace fp4arena {

TimingStats summarize(const std::vector<double>& ms) {
  TimingStats s;
  s.samples = static_cast<int>(ms.size());
  if (ms.empty()) return s;
  std::vector<double> v = ms;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  s.median_ms = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.min_ms = v.front();
  s.max_ms = v.back();
  double sum = 0;
  for (double x : v) sum += x;
  s.mean_ms = sum / double(n);
  double ss = 0;
  for (double x : v) ss += (x - s.mean_ms) * (x - s.mean_ms);
  s.std_ms = n > 1 ? std::sqrt(ss / double(n - 1)) : 0;
  s.rse = n > 1 && s.mean_ms > 0 ? s.std_ms / std::sqrt(double(n)) / s.mean_ms : 1.0;
  return s;
}

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::kConverged:
      return "converged";
    case StopReason::kMaxSamples:
      return "max_samples";
    case StopReason::kTimeCap:
      return "time_cap";
    case StopReason::kNone:
      break;
  }
  return "";
}

StopReason stop_reason(const std::vector<double>& ms, const TimingSpec& t, double elapsed_seconds) {
  int n = static_cast<int>(ms.size());
  if (n >= t.min_samples && summarize(ms).rse <= t.target_rse) return StopReason::kConverged;
  if (n >= t.max_samples) return StopReason::kMaxSamples;
  if (n >= 1 && elapsed_seconds >= t.max_seconds) return StopReason::kTimeCap;
  return StopReason::kNone;
}

bool should_stop(const std::vector<double>& ms, const TimingSpec& t, double elapsed_seconds) {
  return stop_reason(ms, t, elapsed_seconds) != StopReason::kNone;
}

SampleRun sample_loop(const TimingSpec& timing, const TimedCall& call,
                      const std::function<void(const SampleRun&, bool warmup)>& after_call) {
  using Clock = std::chrono::steady_clock;
  SampleRun run;
  Clock::time_point t_samples = Clock::now();
  for (;;) {
    const bool warm = run.calls < timing.warmup_calls;
    if (!warm && run.calls == timing.warmup_calls) t_samples = Clock::now();
    if (!warm) {
      double elapsed = std::chrono::duration<double>(Clock::now() - t_samples).count();
      run.stopped = stop_reason(run.samples, timing, elapsed);
      if (run.stopped != StopReason::kNone) break;
    }
    double ms = 0;
    std::string err;
    const bool ok = call(run.calls, warm, &ms, &err);
    ++run.calls;
    if (!ok) {
      run.ok = false;
      run.error = err;
      break;
    }
    if (!warm) run.samples.push_back(ms);
    run.stats = summarize(run.samples);
    if (after_call) after_call(run, warm);
  }
  run.stats = summarize(run.samples);
  return run;
}

}  // namespace fp4arena
