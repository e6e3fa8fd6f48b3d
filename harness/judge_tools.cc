// The actions beside run and submit: dump, sweep, sanitize (compute-sanitizer) and profile
// (ncu).
#include "harness/session.h"

namespace fp4arena {
namespace judging {

namespace {

std::string read_logs(const std::vector<std::string>& logs, size_t first) {
  std::string all;
  for (size_t i = first; i < logs.size(); ++i) {
    std::string text, ignored;
    if (read_file(logs[i], &text, &ignored)) all += text + "\n";
  }
  return all;
}
}  // namespace

ExitCode Session::run_dump() {
  std::string err;
  if (opts_.cases.size() != 1) {
    return fail(usage("--action dump: give exactly one --case NAME"));
  }
  const CaseSpec& c = *spec_.find_case(opts_.cases.front());
  std::string no_gpu;
  gpu_ = cuda_device_count(&no_gpu) > 0 && cudaSetDevice(opts_.device) == cudaSuccess;
  const std::string dir =
      opts_.dump_dir.empty() ? "dump/" + spec_.name + "/" + c.name : opts_.dump_dir;
  const uint64_t seed = case_seed(c);
  ProblemData in;
  if (!challenge_->generate(c, seed, &in, &err)) return fail_internal("generator failed: " + err);
  Expected expected;
  if (!compute_expected(in, &expected, &err)) return fail_internal("oracle failed: " + err);
  std::vector<std::string> files;
  if (!dump_case(spec_, c, seed, in, expected, dir, &files, &err)) {
    return fail(usage("--action dump: " + err));
  }
  log_ << "dump     " << spec_.name << " case " << c.name << " (" << shape_text(spec_, c.dims)
       << ", seed " << seed << ") -> " << dir << "/\n";
  for (const std::string& f : files) log_ << "  " << f << "\n";
  log_ << "load with: python3 " << dir << "/load.py\n";
  return ExitCode::kPassed;
}

SweepReport Session::sweep_report(const std::string& timing_text) const {
  SweepReport rep;
  rep.judge_version = FP4ARENA_VERSION;
  rep.created_utc = utc_now();
  rep.challenge = spec_.name;
  rep.spec_version = spec_.spec_version;
  rep.title = spec_.title;
  rep.solution_path = opts_.solution_path;
  rep.solution_sha256 = compiled_.source_sha256;
  rep.device = device_to_json(device_, nvcc_version_);
  rep.metric_name = spec_.metric.name();
  rep.metric_unit = spec_.metric.unit();
  rep.workload_kind = spec_.metric.workload();
  rep.expression = spec_.metric.expression;
  rep.limit_name = limit_name(spec_.limit);
  rep.limit_value = limit();
  rep.shapes_source = sweep_source_;
  rep.timing = timing_text;
  rep.yardstick_name = opts_.yardstick ? challenge_->yardstick_name() : "";
  return rep;
}

SweepShape Session::sweep_shape(const CaseSpec& c, const BenchmarkResult& b) {
  SweepShape s;
  s.name = c.name;
  s.label = shape_text(spec_, c.dims);
  for (const DimSpec& d : spec_.dims) s.dims.emplace_back(d.name, c.dims.at(d.name));
  s.workload = case_workload(spec_, c.dims);
  s.verdict = verdict_name(b.verdict);
  s.reason = b.reason;
  s.samples = b.stats.samples;
  if (b.passed() && b.value) {
    s.median_ms = b.stats.median_ms;
    s.value = *b.value;
    if (b.speed_of_light.ms > 0) s.speed_of_light_ms = b.speed_of_light.ms;
    if (limit() > 0 && *s.value > limit()) {
      s.over_limit = true;
      s.reason = "over_limit: " + fixed(*s.value, 1) + " " + spec_.metric.unit() +
                 " exceeds the device's " + limit_name(spec_.limit) + " limit of " +
                 fixed(limit(), 1) + " " + spec_.metric.unit();
      log_ << "        " << s.reason << "\n";
    }
  }
  if (b.yardstick) {
    s.yardstick =
        SweepYardstickResult{b.yardstick->name, b.yardstick->stats.median_ms, b.yardstick->value};
  }
  return s;
}

ExitCode Session::write_sweep(const SweepReport& rep, JudgeOutcome* outcome) {
  int passed = 0;
  for (const SweepShape& s : rep.shapes) passed += s.passed();
  const nlohmann::json doc = sweep_json(rep);
  outcome->record = doc;
  const std::string dir = sweep_dir();
  std::string err;
  const std::string json_path = dir + "/sweep.json", html_path = dir + "/sweep.html",
                    svg_path = dir + "/sweep.svg";
  if (!make_dirs(dir, &err) ||
      !write_file_atomic(json_path,
                         doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
                         &err) ||
      !write_file_atomic(html_path, sweep_html(rep), &err) ||
      !write_file_atomic(svg_path, sweep_svg(rep), &err)) {
    return fail_internal("writing the sweep: " + err);
  }
  outcome->record_path = json_path;
  log_ << "result   " << (rep.passed() ? "PASSED" : "FAILED") << "  " << passed << "/"
       << rep.shapes.size() << " shapes passed in " << fixed(rep.wall_seconds, 1) << " s\n"
       << "sweep    " << json_path << "\n"
       << "chart    " << html_path << " (the chart alone: " << svg_path << ")\n";
  if (!fatal_.empty()) return fail_internal(fatal_);
  return rep.passed() ? ExitCode::kPassed : ExitCode::kFailed;
}

ExitCode Session::run_sweep(JudgeOutcome* outcome) {
  // As for run and submit: the judge's memory must not be readable by the worker.
  prctl(PR_SET_DUMPABLE, 0);
  std::vector<const CaseSpec*> shapes;
  for (const CaseSpec& c : sweep_shapes_) {
    if (selected(c)) shapes.push_back(&c);
  }
  const TimingSpec timing = timing_for_action();
  const std::string timing_text =
      "each shape timed as --action run does: " + std::to_string(timing.warmup_calls) +
      " warm-up calls, then " + std::to_string(timing.min_samples) + " to " +
      std::to_string(timing.max_samples) + " samples within " + fixed(timing.max_seconds, 0) +
      " s, fresh inputs and every output checked on every call; the yardstick" +
      (opts_.yardstick ? " timed the same way" : " not timed (--no-yardstick)");
  log_ << "sweep    " << shapes.size() << (shapes.size() == 1 ? " shape" : " shapes") << " from "
       << sweep_source_ << "; " << timing_text << "\n";
  SweepReport rep = sweep_report(timing_text);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const CaseSpec& c = *shapes[i];
    progress_tag_ = "[" + std::to_string(i + 1) + "/" + std::to_string(shapes.size()) + "] ";
    BenchmarkResult b;
    if (fatal_.empty()) {
      b = run_benchmark(c);
    } else {
      b = not_run_benchmark(c);
      log_ << "  SKIP  " << c.name << "  " << shape_text(spec_, c.dims) << ": " << fatal_ << "\n";
    }
    rep.shapes.push_back(sweep_shape(c, b));
  }
  progress_tag_.clear();
  calls_.stop();
  reap_orphans();
  rep.wall_seconds = seconds_since(t_start_);
  return write_sweep(rep, outcome);
}

ExitCode Session::run_sanitize(nlohmann::json* record) {
  std::string cs = find_tool("compute-sanitizer");
  if (cs.empty()) {
    log_ << "sanitize: compute-sanitizer not found (looked on PATH, next to nvcc and under "
            "/usr/local/cuda): install the CUDA Toolkit's compute-sanitizer to use --action "
            "sanitize\n";
    return ExitCode::kInternal;
  }
  bool failed = false, runtime_failure = false;
  for (const char* tool : {"memcheck", "racecheck"}) {
    // Sanitized code runs 10-100x slower; the worker writes its report when it exits.
    calls_.use_tool({{cs, "--tool", tool, "--log-file", "{LOG}", "--print-limit", "20"}, 50, 120});
    size_t first_log = calls_.tool_logs().size();
    log_ << "sanitize " << tool << " (" << cs << ")\n";
    nlohmann::json tests = nlohmann::json::array();
    for (const CaseSpec& c : spec_.tests) {
      if (!selected(c) || !fatal_.empty()) continue;
      const TestResult r = run_test(c);
      failed |= !r.passed();
      runtime_failure |= is_runtime_failure(r.verdict);
      tests.push_back(to_json(r));
    }
    calls_.stop();  // the tool prints its summary when the worker exits
    SanitizerSummary sum = parse_sanitizer_log(read_logs(calls_.tool_logs(), first_log));
    log_ << "  " << tool << ": ";
    if (!sum.found_summary) {
      log_ << "no summary in the tool's log (did the worker crash?)\n";
      failed = true;
    } else {
      log_ << sum.errors << (sum.errors == 1 ? " error" : " errors") << "\n";
    }
    for (const std::string& f : sum.findings) log_ << "    " << f << "\n";
    failed |= sum.errors > 0;
    (*record)["sanitizer"][tool] = {{"errors", sum.errors},
                                    {"summary_found", sum.found_summary},
                                    {"findings", sum.findings},
                                    {"tests", tests}};
  }
  (*record)["passed"] = !failed;
  log_ << "result   " << (failed ? "FAILED" : "PASSED") << "\n";
  if (!fatal_.empty()) return fail_internal(fatal_);
  return runtime_failure ? ExitCode::kRuntimeError : failed ? ExitCode::kFailed : ExitCode::kPassed;
}

namespace {

// ncu's command line for --action profile: the kernels' sections as raw CSV into {LOG}, the
// clocks left as they are.
std::vector<std::string> ncu_argv(const std::string& ncu) {
  return {ncu,
          "--clock-control",
          "none",
          "--target-processes",
          "all",
          "--section",
          "SpeedOfLight",
          "--section",
          "ComputeWorkloadAnalysis",
          "--section",
          "MemoryWorkloadAnalysis_Tables",
          "--section",
          "WarpStateStats",
          "--csv",
          "--page",
          "raw",
          "--log-file",
          "{LOG}"};
}

// The profiled kernels as a table on `log` and as the record's "kernels"; *total_us gets
// their summed time.
nlohmann::json report_kernels(std::ostream& log, const std::vector<KernelProfile>& kernels,
                              double* total_us_out) {
  auto num = [](double v, int prec) { return v < 0 ? std::string("n/a") : fixed(v, prec); };
  log << "  " << std::left << std::setw(44) << "kernel" << std::right << std::setw(12)
      << "time (us)" << std::setw(8) << "SM %" << std::setw(9) << "issue %" << std::setw(10)
      << "tensor %" << std::setw(7) << "L2 %" << std::setw(9) << "DRAM %" << std::setw(16)
      << "smem conflicts"
      << "  busiest pipe  top stalls (cycles per instruction)"
      << "\n";
  nlohmann::json ks = nlohmann::json::array();
  double total_us = 0;
  for (const KernelProfile& k : kernels) {
    std::string name = k.name.size() > 42 ? k.name.substr(0, 39) + "..." : k.name;
    log << "  " << std::left << std::setw(44) << name << std::right << std::setw(12)
        << num(k.duration_us, 1) << std::setw(8) << num(k.sm_pct, 1) << std::setw(9)
        << num(k.issue_pct, 1) << std::setw(10) << num(k.tensor_pct, 1) << std::setw(7)
        << num(k.l2_pct, 1) << std::setw(9) << num(k.dram_pct, 1) << std::setw(16)
        << num(k.bank_conflicts, 0) << "  " << std::left << std::setw(12)
        << (k.busiest_pipe.empty() ? std::string("n/a")
                                   : k.busiest_pipe + " " + num(k.busiest_pipe_pct, 1) + "%")
        << std::right;
    std::string stalls;
    nlohmann::json js = nlohmann::json::array();
    for (const auto& [reason, cycles] : k.top_stalls) {
      stalls += (stalls.empty() ? "" : ", ") + reason + " " + fixed(cycles, 1);
      js.push_back({{"reason", reason}, {"cycles_per_instruction", cycles}});
    }
    log << "  " << (stalls.empty() ? std::string("n/a") : stalls) << "\n";
    total_us += std::max(0.0, k.duration_us);
    ks.push_back({{"name", k.name},
                  {"duration_us", k.duration_us},
                  {"sm_throughput_pct", k.sm_pct},
                  {"issue_active_pct", k.issue_pct},
                  {"tensor_pipe_pct", k.tensor_pct},
                  {"l2_throughput_pct", k.l2_pct},
                  {"dram_throughput_pct", k.dram_pct},
                  {"shared_bank_conflicts", k.bank_conflicts},
                  {"busiest_pipe", k.busiest_pipe.empty() ? nlohmann::json(nullptr)
                                                          : nlohmann::json(k.busiest_pipe)},
                  {"busiest_pipe_pct", k.busiest_pipe_pct},
                  {"top_stalls", js}});
  }
  *total_us_out = total_us;
  return ks;
}

}  // namespace

ExitCode Session::run_profile(nlohmann::json* record) {
  std::string ncu = find_tool("ncu");
  if (ncu.empty()) {
    log_ << "profile: ncu (Nsight Compute) not found (looked on PATH, next to nvcc, under "
            "/usr/local/cuda and /opt/nvidia/nsight-compute): install Nsight Compute to use "
            "--action profile\n";
    return ExitCode::kInternal;
  }
  const CaseSpec* c =
      opts_.cases.empty() ? &spec_.benchmarks.front() : spec_.find_case(opts_.cases.front());
  std::vector<std::string> wrapper = ncu_argv(ncu);
  std::string report;  // --out DIR: ncu's own report, for Nsight Compute's UI
  if (!opts_.profile_dir.empty()) {
    std::string err;
    if (!make_dirs(opts_.profile_dir, &err)) return fail_internal("--out: " + err);
    report = opts_.profile_dir + "/" + c->name + ".ncu-rep";
    wrapper.insert(wrapper.end(), {"--export", report, "--force-overwrite"});
  }
  calls_.use_tool({wrapper, 60, 300});  // ncu replays each kernel once per metric pass
  calls_.need_shared_bytes(layout_for(spec_, c->dims).total);
  log_ << "profile  " << c->name << " " << shape_text(spec_, c->dims) << ", one call under " << ncu
       << " --clock-control none\n";
  std::vector<ProblemData> ins(1);
  std::string err;
  if (!challenge_->generate(*c, case_seed(*c), &ins[0], &err)) {
    return fail_internal("generator failed: " + err);
  }
  WindowResult failed_start;
  if (!start_or_fail(&failed_start)) {
    log_ << "  " << verdict_name(failed_start.decision.verdict) << ": "
         << failed_start.decision.reason << "\n";
    return fatal_.empty() ? ExitCode::kRuntimeError : fail_internal(fatal_);
  }
  WindowResult v = judge_window(*c, ins, false);
  calls_.stop();  // ncu writes its report when the worker exits
  log_ << "  the profiled call's output: " << verdict_name(v.decision.verdict)
       << (v.decision.reason.empty() ? "" : ": " + v.decision.reason) << "\n";
  std::vector<KernelProfile> kernels;
  std::string text = read_logs(calls_.tool_logs(), 0);
  if (!report.empty()) {
    // With --export ncu may keep its figures in the report only: read them back from it.
    if (!parse_ncu_raw_csv(text, &kernels, &err))
      run_capture({ncu, "--import", report, "--csv", "--page", "raw"}, &text);
    log_ << "report   " << report << " (open it with Nsight Compute: ncu-ui " << report << ")\n";
    (*record)["ncu_report"] = report;
  }
  kernels.clear();
  if (!parse_ncu_raw_csv(text, &kernels, &err)) {
    log_ << "profile: could not read ncu's report: " << err << "\n";
    std::istringstream lines(text);
    std::string line;
    for (int i = 0; i < 20 && std::getline(lines, line); ++i) log_ << "  | " << line << "\n";
    return ExitCode::kInternal;
  }
  double total_us = 0;
  const nlohmann::json ks = report_kernels(log_, kernels, &total_us);
  const double workload = case_workload(spec_, c->dims);
  if (total_us > 0) {
    log_ << "  all kernels: " << fixed(total_us, 1)
         << " us = " << fixed(spec_.metric.value(workload, total_us / 1000.0), 1) << " "
         << spec_.metric.unit()
         << " (ncu serializes and replays kernels: time with --action submit, not this)\n";
  }
  (*record)["case"] = c->name;
  (*record)["kernels"] = ks;
  (*record)["verdict"] = verdict_name(v.decision.verdict);
  return v.decision.verdict == Verdict::kPassed   ? ExitCode::kPassed
         : is_runtime_failure(v.decision.verdict) ? ExitCode::kRuntimeError
                                                  : ExitCode::kFailed;
}

}  // namespace judging
}  // namespace fp4arena
