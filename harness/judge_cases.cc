// Tests and benchmarks: one case judged, its timing, its yardstick and its record entry.
#include "harness/session.h"

namespace fp4arena {
namespace judging {

namespace {

nlohmann::json output_json(const OutputReport& o) {
  nlohmann::json worst = nlohmann::json::array();
  for (const Mismatch& m : o.worst) {
    nlohmann::json w = {{"row", m.row}, {"col", m.col}, {"unwritten", m.unwritten}};
    auto num = [](double v) {
      return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(std::to_string(v));
    };
    w["expected"] = num(m.expected);
    w["got"] = num(m.got);
    if (m.codes) {
      w["expected_code"] = m.expected_code;
      w["got_code"] = m.got_code;
    }
    w["excess"] = num(m.excess);
    worst.push_back(w);
  }
  nlohmann::json j = {{"name", o.name},
                      {"compare", compare_name(o.kind)},
                      {"passed", o.passed},
                      {"elements", o.elements},
                      {"mismatches", o.mismatches},
                      {"unwritten", o.unwritten},
                      {"nonfinite", o.nonfinite},
                      {"ties", o.ties},
                      {"max_abs_err", o.max_abs_err},
                      {"max_rel_err", o.max_rel_err},
                      {"max_excess", o.max_excess},
                      {"worst", worst}};
  if (!o.tile_map.empty()) j["tile_map"] = o.tile_map;
  return j;
}

void print_failure(std::ostream& log, const WindowResult& r) {
  log << "        " << verdict_name(r.decision.verdict) << ": " << r.decision.reason << "\n";
  if (r.decision.verdict != Verdict::kWrongAnswer) return;
  for (const OutputReport& o : r.outputs) {
    if (o.passed) continue;
    log << "        " << o.summary << "\n";
    for (const Mismatch& m : o.worst) {
      log << "          at (row " << m.row << ", col " << m.col << "): expected " << m.expected;
      if (m.codes) log << " (code 0x" << std::hex << m.expected_code << std::dec << ")";
      log << ", got ";
      if (m.unwritten) {
        log << "never written";
      } else {
        log << m.got;
        if (m.codes) log << " (code 0x" << std::hex << m.got_code << std::dec << ")";
      }
      if (!m.codes && !m.unwritten && std::isfinite(m.excess)) {
        log << "  [" << fmt(m.excess, 1) << "x the allowed error]";
      }
      log << "\n";
    }
    std::istringstream map(o.tile_map);
    std::string line;
    while (std::getline(map, line)) log << "        " << line << "\n";
  }
}

nlohmann::json window_json(const WindowClock& c) {
  return {{"delivery", c.pre_ms}, {"call", c.call_ms}, {"snapshot", c.post_ms}};
}

nlohmann::json calibration_json(const WindowCalibration& c) {
  return {{"switch", c.switch_ms},
          {"memops_only", c.memops_ms},
          {"delivery", c.pre_ms},
          {"snapshot", c.post_ms}};
}
}  // namespace

nlohmann::json Session::run_test(const CaseSpec& c) {
  auto t0 = Clock::now();
  const uint64_t seed = case_seed(c);
  nlohmann::json j = {{"name", c.name}, {"seed", seed}, {"dims", c.dims}};
  progress("  ....  " + c.name);
  std::vector<ProblemData> ins(1);
  std::string err;
  WindowResult r;
  if (!challenge_->generate(c, seed, &ins[0], &err)) {
    fatal_ = "generator failed: " + err;
    r.decision = {Verdict::kNotRun, fatal_};
  } else if (start_or_fail(&r)) {
    r = judge_window(c, ins, false);
  }
  if (is_runtime_failure(r.decision.verdict)) worker_.reset();  // a fresh worker next
  end_progress();
  const bool passed = r.decision.verdict == Verdict::kPassed;
  j["verdict"] = verdict_name(r.decision.verdict);
  j["reason"] = r.decision.reason;
  nlohmann::json outputs = nlohmann::json::array();
  for (const OutputReport& o : r.outputs) outputs.push_back(output_json(o));
  j["outputs"] = outputs;
  j["wall_ms"] = seconds_since(t0) * 1000.0;
  log_ << "  " << (passed ? "PASS" : "FAIL") << "  " << std::left << std::setw(24) << c.name
       << std::setw(18) << shape_text(spec_, c.dims) << std::right;
  if (passed) {
    std::string sep;
    for (const OutputReport& o : r.outputs) {
      log_ << sep << o.name << ": ";
      if (o.kind == CompareKind::kExact || o.kind == CompareKind::kExactOrTie) {
        log_ << "exact";
        if (o.ties) log_ << " (" << o.ties << " ties)";
      } else {
        log_ << "max abs err " << o.max_abs_err;
      }
      sep = "  ";
    }
    log_ << "\n";
  } else {
    log_ << "\n";
    print_failure(log_, r);
    log_ << "        replay: --case " << c.name << " --seed " << seed << "\n";
  }
  return j;
}

void Session::time_yardstick(const std::vector<ProblemData>& ins, const TimingSpec& timing,
                             double workload, nlohmann::json* j) {
  const std::string name = challenge_->yardstick_name();
  if (name.empty() || ins.empty()) return;
  std::string err;
  progress("  ....  yardstick");
  auto not_measured = [&](const std::string& why) {
    end_progress();
    if (!why.empty()) log_ << "        yardstick not measured: " << why << "\n";
  };
  PreCall* pc = judge_pre_call(&err);
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
  const double value = spec_.metric.value(workload, run.stats.median_ms);
  // A sweep times the yardstick on shapes the solution failed too: no ratio there.
  const nlohmann::json& mine = (*j)["value"];
  const bool have_mine = mine.is_number() && value > 0;
  (*j)["yardstick"] = {
      {"name", name},
      {"samples", run.stats.samples},
      {"calls_per_sample", calls},
      {"median_ms", run.stats.median_ms},
      {"min_ms", run.stats.min_ms},
      {"max_ms", run.stats.max_ms},
      {"value", value},
      {"ratio", have_mine ? nlohmann::json(mine.get<double>() / value) : nlohmann::json(nullptr)}};
  log_ << "        " << name << "  " << fmt(run.stats.median_ms, 4) << " ms  " << fmt(value, 1)
       << " " << spec_.metric.unit();
  if (have_mine) log_ << "  -> ratio " << fmt(mine.get<double>() / value, 2);
  log_ << "\n";
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

nlohmann::json Session::run_benchmark(const CaseSpec& c) {
  auto t0 = Clock::now();
  const uint64_t first_seed = case_seed(c);
  nlohmann::json j = {{"name", c.name}, {"seed", first_seed}, {"dims", c.dims}};
  const double workload = case_workload(spec_, c.dims);
  j["workload"] = workload;
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
        if (!generate_sets(c, count, window == 0, first_seed, &ins, &seeds, &e)) {
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
        last = judge_window(c, ins, true);
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
          w.calls_per_window = calls_for(w.fastest_ms, layout);
        }
        *ms = last.judge_call_ms;
        if (!warm) {
          w.add(last);
          sample_seeds_[c.name].push_back(seeds);
        }
        return true;
      },
      [&](const SampleRun& r, bool warm) {
        progress("  ....  " + c.name + "  " +
                 (warm ? "warm-up" : "sample " + std::to_string(r.samples.size())) +
                 (r.samples.empty() ? ""
                                    : "  median " + fmt(r.stats.median_ms, 4) + " ms  rse " +
                                          fmt(100 * r.stats.rse, 2) + "%"));
      });
  if (is_runtime_failure(last.decision.verdict)) worker_.reset();
  end_progress();
  const bool passed = run.ok && last.decision.verdict == Verdict::kPassed && run.stats.samples > 0;
  const Verdict v = passed ? Verdict::kPassed
                           : (last.decision.verdict == Verdict::kPassed ? Verdict::kNotRun
                                                                        : last.decision.verdict);
  fill_benchmark_json(run, w, last, passed, v, workload, &j);
  const SpeedOfLight sol = case_speed_of_light(c, ins);
  add_speed_of_light(sol, passed ? run.stats.median_ms : 0, &j);
  report_benchmark(c, timing, run, sol, w, last, passed, v, failed_seed);
  // A submit times the yardstick where the case passed; a sweep on every shape it can, the
  // solution's failures too (time_yardstick does nothing without inputs).
  const bool sweep = opts_.action == Action::kSweep;
  if (opts_.yardstick && (sweep || (passed && opts_.action == Action::kSubmit)))
    time_yardstick(ins, timing, workload, &j);
  j["wall_ms"] = seconds_since(t0) * 1000.0;
  return j;
}

void Session::fill_benchmark_json(const SampleRun& run, const WindowSamples& w,
                                  const WindowResult& last, bool passed, Verdict v, double workload,
                                  nlohmann::json* out) const {
  nlohmann::json& j = *out;
  const TimingStats& s = run.stats;
  j["verdict"] = verdict_name(v);
  j["reason"] = passed ? "" : last.decision.reason;
  j["calls"] = w.calls;
  j["samples"] = s.samples;
  j["calls_per_sample"] = w.calls_per_window;
  j["median_ms"] = s.median_ms;
  j["mean_ms"] = s.mean_ms;
  j["std_ms"] = s.std_ms;
  j["min_ms"] = s.min_ms;
  j["max_ms"] = s.max_ms;
  j["rse"] = s.rse;
  j["stopped_by"] = stop_reason_name(run.stopped);
  j["judge_window_median_ms"] = window_json(median_window(w.clocks));
  j["judge_calibration_ms"] = calibration_json(calib_);
  j["judge_delivery_model_ms"] = last.delivery_model_ms;
  j["judge_snapshot_model_ms"] = last.snapshot_model_ms;
  j["worker_reported_median_ms"] = summarize(w.worker_ms).median_ms;
  j["host_call_median_ms"] = summarize(w.host_ms).median_ms;
  j["synchronising_windows"] = w.queued_late;
  const double value = passed ? spec_.metric.value(workload, s.median_ms) : 0;
  j["value"] = passed ? nlohmann::json(value) : nlohmann::json(nullptr);
  j["pct_of_limit"] =
      limit() > 0 && passed ? nlohmann::json(100 * value / limit()) : nlohmann::json(nullptr);
  j["sm_clock_after_mhz"] = current_sm_clock_mhz(device_);
  j["yardstick"] = nullptr;
  if (!passed) {
    nlohmann::json outputs = nlohmann::json::array();
    for (const OutputReport& o : last.outputs) outputs.push_back(output_json(o));
    j["outputs"] = outputs;
  }
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

void Session::add_speed_of_light(const SpeedOfLight& sol, double median_ms, nlohmann::json* j) {
  const bool known = sol.ms > 0;
  (*j)["speed_of_light_ms"] = known ? nlohmann::json(sol.ms) : nlohmann::json(nullptr);
  (*j)["bound_by"] =
      known ? nlohmann::json(sol.memory_bound() ? "memory" : "compute") : nlohmann::json(nullptr);
  (*j)["pct_of_speed_of_light"] =
      known && median_ms > 0 ? nlohmann::json(100 * sol.ms / median_ms) : nlohmann::json(nullptr);
}

void Session::report_benchmark(const CaseSpec& c, const TimingSpec& timing, const SampleRun& run,
                               const SpeedOfLight& sol, const WindowSamples& w,
                               const WindowResult& last, bool passed, Verdict v,
                               uint64_t failed_seed) {
  const TimingStats& s = run.stats;
  log_ << "  " << (passed ? "PASS" : "FAIL") << "  " << std::left << std::setw(10) << c.name
       << std::setw(18) << shape_text(spec_, c.dims) << std::right;
  if (!passed) {
    log_ << "\n";
    WindowResult shown = last;
    shown.decision.verdict = v;
    print_failure(log_, shown);
    log_ << "        replay: " << replay_args(c, failed_seed) << "\n";
    return;
  }
  const double value = spec_.metric.value(case_workload(spec_, c.dims), s.median_ms);
  log_ << "median " << fmt(s.median_ms, 4) << " ms  " << fmt(value, 1) << " "
       << spec_.metric.unit();
  if (sol.ms > 0) {
    log_ << "  " << fmt(100 * sol.ms / s.median_ms, 1) << "% of speed of light ("
         << (sol.memory_bound() ? "memory" : "compute") << ")";
  }
  log_ << "  n=" << s.samples << "x" << w.calls_per_window << " rse " << fmt(100 * s.rse, 2)
       << "%\n";
  if (run.stopped == StopReason::kTimeCap && s.samples < timing.min_samples) {
    log_ << "        note: the " << fmt(timing.max_seconds, 0)
         << " s time cap ended sampling after " << s.samples
         << " samples, fewer than the spec's min_samples " << timing.min_samples
         << " (each call's generation and checking is slow at this size)\n";
  } else if (run.stopped != StopReason::kConverged) {
    log_ << "        note: sampling stopped by " << stop_reason_name(run.stopped)
         << " before the rse reached " << fmt(100 * timing.target_rse, 2) << "%\n";
  }
  if (w.queued_late > 0) {
    log_ << "        note: in " << w.queued_late << " of " << s.samples
         << " windows solve() had not returned " << fmt(kQueueWaitSeconds, 1)
         << " s after the calls were asked for (it waits for the device): those windows time "
            "its calls as they come, host time included\n";
  }
  const double host_median = summarize(w.host_ms).median_ms;
  if (host_median > 0.2 * s.median_ms && host_median > 0.05) {
    log_ << "        note: solve() spends " << fmt(host_median, 3)
         << " ms on the host per call (median)\n";
  }
}

}  // namespace judging
}  // namespace fp4arena
