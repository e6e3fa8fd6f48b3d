// Tests and benchmarks: one case judged, its timing, its yardstick and its record entry.
#include "harness/session.h"

namespace fp4arena {
namespace judging {

TestResult Session::run_test(const CaseSpec& c) {
  auto t0 = Clock::now();
  TestResult t = not_run_test(c);
  t.reason.clear();
  progress("  ....  " + c.name);
  std::vector<ProblemData> ins(1);
  std::string err;
  WindowResult r;
  if (!challenge_->generate(c, t.seed, &ins[0], &err)) {
    fatal_ = "generator failed: " + err;
    r.decision = {Verdict::kNotRun, fatal_};
  } else if (start_or_fail(&r)) {
    r = judge_window(c, ins, false);
  }
  if (is_runtime_failure(r.decision.verdict)) calls_.stop();  // a fresh worker next
  end_progress();
  t.verdict = r.decision.verdict;
  t.reason = r.decision.reason;
  t.outputs = r.outputs;
  t.wall_ms = seconds_since(t0) * 1000.0;
  reporter().test(t, "--case " + c.name + " --seed " + std::to_string(t.seed));
  return t;
}

void Session::not_run(const CaseSpec& c, CaseResult* r) const {
  r->name = c.name;
  r->seed = case_seed(c);
  r->dims = c.dims;
  r->verdict = Verdict::kNotRun;
  r->reason = fatal_;
}

TestResult Session::not_run_test(const CaseSpec& c) const {
  TestResult t;
  not_run(c, &t);
  return t;
}

std::optional<YardstickResult> Session::time_yardstick(const std::vector<ProblemData>& ins,
                                                       const TimingSpec& timing, double workload,
                                                       std::optional<double> mine) {
  const std::string name = challenge_->yardstick_name();
  if (name.empty() || ins.empty()) return std::nullopt;
  std::string err;
  progress("  ....  yardstick");
  auto not_measured = [&](const std::string& why) -> std::optional<YardstickResult> {
    end_progress();
    reporter().yardstick_not_measured(why);
    return std::nullopt;
  };
  PreCall* pc = calls_.judge_pre_call(&err);
  if (!pc) return not_measured(err);
  // One yardstick per input set, made as the window needs them: as many back-to-back calls
  // per sample as make window_target_ms() (at most one per set), timed as a window's calls are.
  std::vector<std::unique_ptr<Yardstick>> ys;
  auto make = [&](size_t n) {
    while (ys.size() < n) {
      ys.push_back(challenge_->make_yardstick(ins[ys.size()], &err));
      if (!ys.back()) return false;
    }
    return true;
  };
  auto launch = [&](int i, std::string* e) { return ys[size_t(i)]->launch(e); };
  double one_ms = 0;
  if (!make(1) || !time_back_to_back(*pc, 1, 0, launch, &one_ms, &err)) return not_measured(err);
  const int calls = int(
      std::min<double>(double(ins.size()), std::ceil(window_target_ms() / std::max(one_ms, 1e-3))));
  if (!make(size_t(calls))) return not_measured(err);
  SampleRun run = sample_loop(timing, [&](int call, bool, double* ms, std::string* e) {
    return time_back_to_back(*pc, calls, call, launch, ms, e);
  });
  ys.clear();
  end_progress();
  if (!run.ok || run.stats.median_ms <= 0) return not_measured(run.error);
  YardstickResult y;
  y.name = name;
  y.calls_per_sample = calls;
  y.stats = run.stats;
  y.value = spec_.metric.value(workload, run.stats.median_ms);
  // A sweep times the yardstick on shapes the solution failed too: no ratio there.
  if (mine && y.value > 0) y.ratio = *mine / y.value;
  reporter().yardstick(y);
  return y;
}

TimingSpec Session::timing_for_action() const {
  TimingSpec timing = spec_.timing;
  if (opts_.action != Action::kSubmit) {  // run, sweep: a quick look; submit: the full rule
    timing.max_samples = std::min(timing.max_samples, 15);
    timing.min_samples = std::min(timing.min_samples, 5);
    timing.max_seconds = std::min(timing.max_seconds, 10.0);
    timing.warmup_calls = std::min(timing.warmup_calls, 2);
    if (opts_.max_samples > 0) {
      timing.max_samples = std::min(timing.max_samples, opts_.max_samples);
      timing.min_samples = std::min(timing.min_samples, timing.max_samples);
    }
  }
  return timing;
}

BenchmarkResult Session::run_benchmark(const CaseSpec& c) {
  auto t0 = Clock::now();
  BenchmarkResult b = not_run_benchmark(c);
  const uint64_t first_seed = b.seed;
  const TimingSpec timing = timing_for_action();
  const Layout layout = layout_for(spec_, c.dims);
  std::vector<ProblemData> ins;  // the last window's inputs (the yardstick's)
  std::vector<uint64_t> seeds;
  WindowSamples w;
  WindowResult last;
  uint64_t failed_seed = first_seed;
  SampleRun run = sample_loop(
      timing,
      [&](int window, bool warm, double* ms, std::string* err) {
        // The first window is one call, with the case's own seed (reproducible): its time
        // sets how many calls every later window makes.
        const int count = window == 0 ? 1 : w.calls_per_window;
        std::string e;
        const auto g0 = Clock::now();
        const bool made = generate_sets(c, count, window == 0, first_seed, &ins, &seeds, &e);
        w.cost.generate_s += seconds_since(g0);
        if (!made) {
          ins.clear();
          fatal_ = "generator failed: " + e;
          last = WindowResult{};
          last.decision = {Verdict::kNotRun, fatal_};
          *err = fatal_;
          return false;
        }
        if (!start_or_fail(&last)) {
          *err = last.decision.reason;
          return false;
        }
        const auto x0 = Clock::now();
        last = judge_window(c, ins, true);
        w.cost.check_s += last.check_s;
        w.cost.exchange_s += seconds_since(x0) - last.check_s;
        if (last.decision.verdict != Verdict::kPassed) {
          failed_seed = seeds[size_t(last.failed_call)];
          last.decision.reason = "call " + std::to_string(w.calls + last.failed_call + 1) +
                                 " (seed " + std::to_string(failed_seed) +
                                 "): " + last.decision.reason;
          *err = last.decision.reason;
          return false;
        }
        w.calls += count;
        // Every warm-up window (the first call carries one-time costs: module loads, first
        // allocations) refines the per-call time the window's size comes from.
        if (warm || window == 0) {
          w.fastest_ms = std::min(w.fastest_ms, last.judge_call_ms);
          w.calls_per_window = calls_.calls_for(w.fastest_ms, layout, window_target_ms());
        }
        *ms = last.judge_call_ms;
        if (!warm) {
          w.add(last);
          sample_seeds_[c.name].push_back(seeds);
        }
        return true;
      },
      [&](const SampleRun& r, bool warm) { sampling_progress(c.name, r, warm); });
  if (is_runtime_failure(last.decision.verdict)) calls_.stop();
  end_progress();
  fill_benchmark(run, w, last, &b);
  b.speed_of_light = case_speed_of_light(c, ins);
  reporter().benchmark(b, timing, replay_args(c, failed_seed));
  // A submit times the yardstick where the case passed; a sweep on every shape it can, the
  // solution's failures too (time_yardstick does nothing without inputs).
  const bool sweep = opts_.action == Action::kSweep;
  if (opts_.yardstick && (sweep || (b.passed() && opts_.action == Action::kSubmit))) {
    const auto y0 = Clock::now();
    b.yardstick = time_yardstick(ins, timing, b.workload, b.value);
    b.judge_cost.yardstick_s = seconds_since(y0);
  }
  b.wall_ms = seconds_since(t0) * 1000.0;
  return b;
}

void Session::sampling_progress(const std::string& name, const SampleRun& r, bool warm) {
  progress("  ....  " + name + "  " +
           (warm ? "warm-up" : "sample " + std::to_string(r.samples.size())) +
           (r.samples.empty() ? ""
                              : "  median " + fixed(r.stats.median_ms, 4) + " ms  rse " +
                                    fixed(100 * r.stats.rse, 2) + "%"));
}

BenchmarkResult Session::not_run_benchmark(const CaseSpec& c) const {
  BenchmarkResult b;
  not_run(c, &b);
  b.workload = case_workload(spec_, c.dims);
  return b;
}

void Session::fill_benchmark(const SampleRun& run, const WindowSamples& w, const WindowResult& last,
                             BenchmarkResult* out) const {
  BenchmarkResult& b = *out;
  const bool passed = run.ok && last.decision.verdict == Verdict::kPassed && run.stats.samples > 0;
  b.ran = true;
  b.verdict = passed ? Verdict::kPassed
                     : (last.decision.verdict == Verdict::kPassed ? Verdict::kNotRun
                                                                  : last.decision.verdict);
  b.reason = passed ? "" : last.decision.reason;
  b.calls = w.calls;
  b.calls_per_sample = w.calls_per_window;
  b.stats = run.stats;
  b.stopped = run.stopped;
  b.window_median = median_window(w.clocks);
  b.calibration = calls_.calibration();
  b.delivery_model_ms = last.delivery_model_ms;
  b.snapshot_model_ms = last.snapshot_model_ms;
  b.worker_reported_median_ms = summarize(w.worker_ms).median_ms;
  b.host_call_median_ms = summarize(w.host_ms).median_ms;
  b.synchronising_windows = w.queued_late;
  b.judge_cost = w.cost;
  if (passed) {
    b.value = spec_.metric.value(b.workload, run.stats.median_ms);
    if (limit() > 0) b.pct_of_limit = 100 * *b.value / limit();
  } else {
    b.outputs = last.outputs;
  }
  b.sm_clock_after_mhz = current_sm_clock_mhz(device_);
}

SpeedOfLight Session::case_speed_of_light(const CaseSpec& c,
                                          const std::vector<ProblemData>& ins) const {
  if (!spec_.metric.bytes_from_inputs) return speed_of_light(spec_, c.dims, device_.shape());
  double sum = 0;
  for (const ProblemData& in : ins) {
    const double b = challenge_->min_bytes(in);
    if (b < 0) return SpeedOfLight{};  // the challenge cannot count them: no figure
    sum += b;
  }
  return ins.empty() ? SpeedOfLight{}
                     : speed_of_light(spec_, c.dims, device_.shape(), sum / ins.size());
}

}  // namespace judging
}  // namespace fp4arena
