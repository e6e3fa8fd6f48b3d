// The judge's windows of calls judged: each window made by the call protocol (WorkerCalls,
// harness/worker_calls.h), then every call's verdict (how it ended, its integrity, then each
// output against the oracle).
#include "harness/session.h"
#include "reference/parallel.h"

namespace fp4arena {
namespace judging {

bool Session::start_or_fail(WindowResult* r) {
  std::string err;
  bool load_failed = false;
  CallFacts facts;
  if (calls_.running() || calls_.start(&err, &load_failed, &facts)) return true;
  if (load_failed) {
    r->decision = decide_verdict(facts);
    if (r->decision.verdict == Verdict::kPassed) r->decision = {Verdict::kCrashed, err};
  } else {
    fatal_ = err;
    r->decision = {Verdict::kNotRun, err};
  }
  return false;
}

bool Session::gpu_oracle(const std::map<std::string, int64_t>& dims) const {
  return gpu_ && case_workload(spec_, dims) >= kGpuOracleWorkload;
}

bool Session::compute_expected(const ProblemData& in, Expected* out, std::string* err,
                               const std::map<std::string, std::vector<uint8_t>>* written) {
  const bool gpu = gpu_oracle(in.dims);
  out->clear();
  if (!challenge_->oracle(in, gpu ? OracleDevice::kGpu : OracleDevice::kCpu, out, err)) {
    return false;
  }
  if (written && !challenge_->condition(in, *written, out, err)) return false;
  for (const ParamSpec* p : spec_.outputs()) {
    auto it = out->find(p->name);
    if (it == out->end()) {
      *err = "the oracle gave no answer for output '" + p->name + "'";
      return false;
    }
    int64_t rows = 0, cols = 0;
    output_matrix(*p, in.dims, &rows, &cols);
    if (!check_expected(*p, rows * cols, buffer_bytes(*p, in.dims), it->second, err)) return false;
  }
  return true;
}

bool Session::generate_sets(const CaseSpec& c, int count, bool use_first_seed, uint64_t first_seed,
                            std::vector<ProblemData>* ins, std::vector<uint64_t>* seeds,
                            std::string* err) {
  ins->assign(size_t(count), ProblemData{});
  seeds->assign(size_t(count), 0);
  for (int i = 0; i < count; ++i) {
    // A seed the worker cannot predict for every call but a case's first, so replaying an
    // earlier output can never pass.
    (*seeds)[i] = use_first_seed && i == 0 ? first_seed : random_u64();
  }
  // The sets are independent (a generator is a function of its case and seed): made side by
  // side, one worker each (a generator's own loops get that worker's share of the threads),
  // the first error kept.
  std::vector<std::string> errs(static_cast<size_t>(count));
  ParallelFor(ResolveThreads(0), size_t(count), [&](size_t i) {
    std::string e;
    if (!challenge_->generate(c, (*seeds)[i], &(*ins)[i], &e)) errs[i] = e.empty() ? "?" : e;
  });
  for (const std::string& e : errs) {
    if (!e.empty()) {
      *err = e;
      return false;
    }
  }
  return true;
}

WindowResult Session::judge_window(const CaseSpec& c, const std::vector<ProblemData>& ins,
                                   bool timed) {
  WindowResult r;
  r.calls = int(ins.size());
  if (timed && calls_.timed() && !calls_.shared_gpu().empty()) {
    fatal_ = calls_.shared_gpu();
    r.decision = {Verdict::kNotRun, fatal_};
    return r;
  }
  const Layout layout = layout_for(spec_, ins.front().dims);
  const std::vector<const ParamSpec*> outs = spec_.outputs();
  // Outputs whose type has no NaN get a random poison byte per window; an untimed window (a
  // test) of such an output is made twice, the second time with the complementary poison,
  // so that an element never written is told apart from one that equals the poison.
  std::vector<Poison> poisons(outs.size()), second_poisons(outs.size());
  bool twice = false;
  for (size_t i = 0; i < outs.size(); ++i) {
    random_bytes(&poisons[i].byte, 1);
    second_poisons[i].byte = static_cast<uint8_t>(~poisons[i].byte);
    twice |= !timed && ins.size() == 1 && !dtype_has_nan_poison(outs[i]->dtype);
  }
  RawWindow raw = calls_.send_window(c, ins, layout, poisons);
  if (raw.judge_failed) {
    fatal_ = calls_.failure();
    r.decision = {Verdict::kNotRun, fatal_};
    return r;
  }
  r.clock = raw.clock;
  r.queued_late = raw.queued_late;
  r.delivery_model_ms = raw.delivery_model_ms;
  r.snapshot_model_ms = raw.snapshot_model_ms;
  r.worker_event_ms = raw.worker_event_ms / r.calls;
  r.host_call_ms = raw.host_call_ms / r.calls;
  const WindowCalibration& calib = calls_.calibration();
  if (calls_.timed()) {
    r.judge_call_ms =
        window_call_ms(raw.clock, calib, raw.delivery_model_ms, raw.snapshot_model_ms, r.calls);
  }
  raw.facts.judge_call_ms = r.judge_call_ms;
  raw.facts.switch_us = calls_.timed() ? calib.switch_ms * 1000.0 : 0.0;
  r.decision = decide_verdict(raw.facts);
  if (r.decision.verdict == Verdict::kTimingEscape) {
    r.decision = confirm_escape(c, ins, layout, poisons, r.decision, &raw);
  }
  r.failed_call = std::max(0, raw.failed_set);
  if (r.decision.verdict != Verdict::kPassed) return r;
  // A repeated window reuses the host image: the first window's outputs are kept.
  std::vector<std::vector<uint8_t>> first, second;
  if (twice) {
    first = calls_.outputs_of(layout, 0);
    RawWindow again = calls_.send_window(c, ins, layout, second_poisons);
    if (again.judge_failed) {
      fatal_ = calls_.failure();
      r.decision = {Verdict::kNotRun, fatal_};
      return r;
    }
    again.facts.judge_call_ms = r.judge_call_ms;
    again.facts.switch_us = raw.facts.switch_us;
    r.decision = decide_verdict(again.facts);
    if (r.decision.verdict != Verdict::kPassed) {
      r.decision.reason = "on the repeated call: " + r.decision.reason;
      return r;
    }
    second = calls_.outputs_of(layout, 0);
  }
  const auto t0 = Clock::now();
  check_answers(ins, layout, first, poisons, twice ? &second : nullptr, second_poisons, &r);
  r.check_s = seconds_since(t0);
  // A timed window whose answers are right must also have taken at least the switches.
  if (r.decision.verdict == Verdict::kPassed && timed && calls_.timed()) {
    r.decision = window_check(raw.clock, calib);
  }
  return r;
}

Decision Session::confirm_escape(const CaseSpec& c, const std::vector<ProblemData>& ins,
                                 const Layout& layout, const std::vector<Poison>& poisons,
                                 const Decision& first, RawWindow* raw) {
  // The worker timed its wait for its context to go idle on its own host clock, which a
  // preempted worker reads long (seen once in some hundred windows with other judges busy on
  // the same host). A solution that leaves work running does so on every call: the window is
  // made once more on the same inputs, and only a repeat that stays busy too confirms the
  // verdict. The first window's clock stays the sample's; the repeat's outputs are checked.
  RawWindow again = calls_.send_window(c, ins, layout, poisons);
  if (again.judge_failed) {
    fatal_ = calls_.failure();
    return {Verdict::kNotRun, fatal_};
  }
  again.facts.judge_call_ms = raw->facts.judge_call_ms;
  again.facts.switch_us = raw->facts.switch_us;
  const Decision second = decide_verdict(again.facts);
  if (second.verdict == Verdict::kTimingEscape) {
    return {first.verdict, first.reason + "; made again on the same inputs, it stayed busy for " +
                               fixed(again.facts.busy_after_us, 0) + " us"};
  }
  log_ << "note     " << c.name << ": " << first.reason
       << "; made again on the same inputs, it did not (the first reading is not held against "
          "it)\n";
  ++escape_rechecks_;
  const WindowClock clock = raw->clock;
  *raw = std::move(again);
  raw->clock = clock;
  return second;
}

// One set's outputs against the oracle: false (and *err) when the oracle failed.
bool Session::check_set(const ProblemData& in, const std::vector<std::vector<uint8_t>>& got,
                        const std::vector<Poison>& poisons,
                        const std::vector<std::vector<uint8_t>>* second,
                        const std::vector<Poison>& second_poisons, SetCheck* out,
                        std::string* err) {
  const std::vector<const ParamSpec*> outs = spec_.outputs();
  std::map<std::string, std::vector<uint8_t>> written;
  for (size_t i = 0; i < outs.size(); ++i) written[outs[i]->name] = got[i];
  Expected expected;
  if (!compute_expected(in, &expected, err, &written)) return false;
  CallFacts facts;
  facts.outputs_checked = true;
  facts.outputs_ok = true;
  for (size_t i = 0; i < outs.size(); ++i) {
    int64_t rows = 0, cols = 0;
    output_matrix(*outs[i], in.dims, &rows, &cols);
    OutputReport o = compare_output(*outs[i], rows, cols, got[i].data(), poisons[i],
                                    second ? (*second)[i].data() : nullptr, second_poisons[i],
                                    expected.at(outs[i]->name));
    if (!o.passed && facts.outputs_ok) {
      facts.outputs_ok = false;
      facts.outputs_summary = o.summary;
    }
    out->outputs.push_back(std::move(o));
  }
  out->decision = decide_verdict(facts);
  return true;
}

void Session::check_answers(const std::vector<ProblemData>& ins, const Layout& layout,
                            const std::vector<std::vector<uint8_t>>& first,
                            const std::vector<Poison>& poisons,
                            const std::vector<std::vector<uint8_t>>* second,
                            const std::vector<Poison>& second_poisons, WindowResult* r) {
  // The sets are checked side by side, one worker each, where the oracle runs on the CPU (a
  // GPU oracle runs on the judge's one stream, one set at a time); the first failing set is
  // reported.
  const int n = int(ins.size());
  std::vector<SetCheck> checks(static_cast<size_t>(n));
  std::vector<std::string> errs(static_cast<size_t>(n));
  std::vector<char> ok(static_cast<size_t>(n), 0);
  ParallelFor(gpu_oracle(ins.front().dims) ? 1 : ResolveThreads(0), size_t(n), [&](size_t s) {
    // The outputs as solve() wrote them (the first window's where it was made twice).
    const std::vector<std::vector<uint8_t>> got =
        first.empty() ? calls_.outputs_of(layout, int(s)) : first;
    ok[s] = check_set(ins[s], got, poisons, second, second_poisons, &checks[s], &errs[s]);
  });
  for (int s = 0; s < n; ++s) {
    if (!ok[size_t(s)]) {
      fatal_ = "oracle failed: " + errs[size_t(s)];
      r->decision = {Verdict::kNotRun, fatal_};
      return;
    }
    r->outputs = std::move(checks[size_t(s)].outputs);
    r->decision = checks[size_t(s)].decision;
    r->failed_call = s;
    if (r->decision.verdict != Verdict::kPassed) return;
  }
}

}  // namespace judging
}  // namespace fp4arena
