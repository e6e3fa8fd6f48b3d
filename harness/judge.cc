#include "harness/judge.h"

#include <sys/prctl.h>

#include <filesystem>

#include "harness/host_memory.h"
#include "harness/json_read.h"
#include "harness/session.h"
#include "harness/sha256.h"
#include "harness/text.h"

namespace fp4arena {

const char* action_name(Action a) {
  switch (a) {
    case Action::kCheck:
      return "check";
    case Action::kTest:
      return "test";
    case Action::kRun:
      return "run";
    case Action::kSubmit:
      return "submit";
    case Action::kSanitize:
      return "sanitize";
    case Action::kProfile:
      return "profile";
    case Action::kDump:
      return "dump";
    case Action::kSweep:
      return "sweep";
  }
  return "?";
}

bool parse_action(const std::string& name, Action* out) {
  for (Action a : {Action::kCheck, Action::kTest, Action::kRun, Action::kSubmit, Action::kSanitize,
                   Action::kProfile, Action::kDump, Action::kSweep}) {
    if (name == action_name(a)) {
      *out = a;
      return true;
    }
  }
  return false;
}

const char* buffer_mode_name(BufferMode m) {
  return m == BufferMode::kRing ? "ring" : "fresh";
}

namespace judging {

namespace {

// The names of `cases`, comma-separated, for a message that lists the valid ones.
std::string case_names(const std::vector<CaseSpec>& cases) {
  std::string names;
  for (const CaseSpec& c : cases) names += (names.empty() ? "" : ", ") + c.name;
  return names;
}

// --output is checked before anything runs: its folder must exist, and an existing file is
// replaced only when it is a record of ours (never a source file, a spec, anything else).
bool check_output_path(const std::string& path, std::string* err) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) {
      *err = path + " exists and is not a regular file";
      return false;
    }
    std::string text, ignored;
    nlohmann::json doc;
    if (st.st_size < (16 << 20) && read_file(path, &text, &ignored)) {
      doc = nlohmann::json::parse(text, nullptr, false);
    }
    auto schema = doc.is_object() ? doc.find("schema") : doc.end();
    if (!doc.is_object() || schema == doc.end() || !schema->is_string() ||
        schema->get<std::string>().rfind("fp4arena.submit.", 0) != 0) {
      *err = path + " exists and is not an fp4arena submit record; refusing to replace it";
      return false;
    }
    return true;
  }
  const std::string dir = dir_of(path);
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *err = "the folder " + dir + " does not exist";
    return false;
  }
  return true;
}

// A sweep's output folder is checked before anything runs: it must be a folder (or be
// creatable under one), and a sweep.json, sweep.html or sweep.svg already in it is replaced
// only when it is one the judge wrote.
bool check_sweep_dir(const std::string& dir, std::string* err) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    // The nearest existing ancestor must be a folder: make_dirs() will create the rest.
    std::string p = dir;
    while (!p.empty() && p.back() == '/') p.pop_back();
    while (true) {
      size_t slash = p.rfind('/');
      p = slash == std::string::npos ? "." : slash == 0 ? "/" : p.substr(0, slash);
      if (stat(p.c_str(), &st) == 0 || p == "." || p == "/") break;
    }
    if (stat(p.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      *err = dir + " cannot be created: " + p + " is not a folder";
      return false;
    }
    return true;
  }
  if (!S_ISDIR(st.st_mode)) {
    *err = dir + " exists and is not a folder; refusing to write the sweep there (give a folder)";
    return false;
  }
  for (const char* name : {"sweep.json", "sweep.html", "sweep.svg"}) {
    const std::string path = dir + "/" + name;
    if (lstat(path.c_str(), &st) != 0) continue;
    if (!S_ISREG(st.st_mode)) {
      *err = path + " exists and is not a regular file; refusing to replace it";
      return false;
    }
    std::string text, ignored;
    bool ours = st.st_size < (64 << 20) && read_file(path, &text, &ignored);
    if (ours && std::string(name) == "sweep.json") {
      nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
      auto schema = doc.is_object() ? doc.find("schema") : doc.end();
      ours = doc.is_object() && schema != doc.end() && schema->is_string() &&
             schema->get<std::string>() == kSweepSchema;
    } else if (ours) {
      // The mark each page carries: sweep_html()'s generator tag, sweep_svg()'s comment.
      const char* mark = std::string(name) == "sweep.html"
                             ? "<meta name=\"generator\" content=\"fp4arena sweep\">"
                             : "<!-- fp4arena sweep -->";
      ours = text.find(mark) != std::string::npos;
    }
    if (!ours) {
      *err = path + " exists and is not a sweep the judge wrote; refusing to replace it";
      return false;
    }
  }
  return true;
}
}  // namespace

bool Session::selected(const CaseSpec& c) const {
  if (opts_.cases.empty()) return true;
  return std::find(opts_.cases.begin(), opts_.cases.end(), c.name) != opts_.cases.end();
}

void Session::progress(const std::string& line) {
  if (!opts_.progress || !tty_) return;
  log_ << "\r\033[K" << progress_tag_ << line << std::flush;
  progress_shown_ = true;
}

void Session::end_progress() {
  if (progress_shown_) log_ << "\r\033[K" << std::flush;
  progress_shown_ = false;
}

ExitCode Session::fail(const JudgeError& e) {
  log_ << "fp4arena: " << e.message << (ends_with(e.message, "\n") ? "" : "\n");
  return e.code;
}

ExitCode Session::fail_internal(const std::string& what) {
  return fail({ExitCode::kInternal, "internal error: " + what});
}

// --action sweep: the shapes (--shapes, else the spec's sweep list, else its benchmarks),
// and every --case among them.
// The cases of the --shapes file, each checked by the challenge.
Failure Session::load_shapes(std::vector<CaseSpec>* out) {
  std::string err;
  if (!load_shapes_file(opts_.shapes_path, spec_, out, &err)) return usage("--shapes: " + err);
  for (size_t i = 0; i < out->size(); ++i) {
    if (!challenge_->check_case((*out)[i], &err)) {
      return usage("--shapes: " + opts_.shapes_path + ": field '[" + std::to_string(i) +
                   "]': " + err);
    }
  }
  return std::nullopt;
}

Failure Session::choose_sweep_shapes() {
  if (!opts_.shapes_path.empty()) {
    if (Failure f = load_shapes(&sweep_shapes_)) return f;
    sweep_source_ = "--shapes " + opts_.shapes_path;
  } else if (!spec_.sweep.empty()) {
    sweep_shapes_ = spec_.sweep;
    sweep_source_ = "the spec's sweep list";
  } else {
    sweep_shapes_ = spec_.benchmarks;
    sweep_source_ = "the spec's benchmarks (it has no sweep list)";
  }
  for (const std::string& name : opts_.cases) {
    auto same = [&](const CaseSpec& c) { return c.name == name; };
    if (std::none_of(sweep_shapes_.begin(), sweep_shapes_.end(), same)) {
      return usage("--case: no shape named '" + name + "' in " + sweep_source_ +
                   "; the shapes: " + case_names(sweep_shapes_));
    }
  }
  return std::nullopt;
}

// The random tests drawn or replayed, then every --case: a case of the spec (test-only
// actions refuse a benchmark).
Failure Session::check_named_cases() {
  // --action test --shapes FILE: the file's shapes are the tests (none drawn at random).
  if (Failure f = opts_.shapes_path.empty() ? add_random_tests() : load_shapes(&spec_.tests))
    return f;
  for (const std::string& name : opts_.cases) {
    if (!spec_.find_case(name)) {
      return usage("--case: no case named '" + name + "' in " + spec_.path +
                   "; the cases: " + case_names(spec_.tests) + "; " + case_names(spec_.benchmarks) +
                   (spec_.random_tests.empty() ? ""
                                               : "; a random test is named like " +
                                                     spec_.random_tests[0].name + "_0a1b2c3d"));
    }
  }
  const auto is_benchmark = [&](const std::string& name) {
    return std::any_of(spec_.benchmarks.begin(), spec_.benchmarks.end(),
                       [&](const CaseSpec& c) { return c.name == name; });
  };
  for (const std::string& name : opts_.cases) {
    if (opts_.action == Action::kTest && is_benchmark(name)) {
      return usage("--case: '" + name +
                   "' is a benchmark; --action test runs test cases only (run or submit time it)");
    }
  }
  return std::nullopt;
}

bool Session::load_challenge(JudgeOutcome* outcome) {
  std::string err;
  if (!load_spec(opts_.challenge_dir, &spec_, &err)) return fail(outcome, usage(err));
  challenge_ = make_challenge(spec_.name);
  if (!challenge_) {
    std::string names;
    for (const std::string& n : registered_challenges()) names += " " + n;
    return fail(outcome, usage(spec_.path + ": field 'name': no challenge code is registered as '" +
                               spec_.name + "' (registered:" + names + ")"));
  }
  if (Failure f = check_spec_cases()) return fail(outcome, *f);
  if (!opts_.shapes_path.empty() && opts_.action != Action::kSweep &&
      opts_.action != Action::kTest) {
    return fail(outcome, usage("--shapes: only with --action sweep or test"));
  }
  if (Failure f = opts_.action == Action::kSweep ? choose_sweep_shapes() : check_named_cases())
    return fail(outcome, *f);
  if (opts_.has_seed && opts_.cases.empty())
    return fail(outcome, usage("--seed: give the case to replay with --case NAME"));
  return true;
}

// Every case of the spec (tests, benchmarks, the sweep list) as its challenge checks it.
Failure Session::check_spec_cases() const {
  std::string err;
  for (const auto* list : {&spec_.tests, &spec_.benchmarks}) {
    for (const CaseSpec& c : *list) {
      if (!challenge_->check_case(c, &err)) return usage(spec_.path + ": " + err);
    }
  }
  for (size_t i = 0; i < spec_.sweep.size(); ++i) {
    if (!challenge_->check_case(spec_.sweep[i], &err))
      return usage(spec_.path + ": field 'sweep[" + std::to_string(i) + "]': " + err);
  }
  return std::nullopt;
}

// The random_tests recipes' cases join the tests: under run and submit with no --case, each
// recipe's count drawn afresh (shapes no solution can know in advance); a --case naming one
// ("random_0a1b2c3d") replays it under any action. Each is checked as a spec case is, and
// the drawn ones are printed with the option that replays them.
Failure Session::add_random_tests() {
  std::vector<CaseSpec> added;
  for (const std::string& name : opts_.cases) {
    CaseSpec c;
    if (!spec_.find_case(name) && random_case_named(spec_, name, &c)) added.push_back(c);
  }
  const bool draw =
      opts_.cases.empty() && (opts_.action == Action::kTest || opts_.action == Action::kRun ||
                              opts_.action == Action::kSubmit);
  for (size_t i = 0; draw && i < spec_.random_tests.size(); ++i) {
    for (int k = 0; k < spec_.random_tests[i].count; ++k) {
      CaseSpec c = random_case(spec_.random_tests[i], static_cast<uint32_t>(random_u64()));
      const bool taken = spec_.find_case(c.name) ||
                         std::any_of(added.begin(), added.end(),
                                     [&](const CaseSpec& a) { return a.name == c.name; });
      if (!taken) added.push_back(c);
    }
  }
  for (const CaseSpec& c : added) {
    std::string err;
    if (!check_case_shape(spec_, c, &err) || !challenge_->check_case(c, &err)) {
      return usage(spec_.path + ": field 'random_tests': the case " + c.name + " (" +
                   shape_text(spec_, c.dims) + ") it draws is not valid: " + err);
    }
    spec_.tests.push_back(c);
  }
  if (draw && !added.empty()) {
    std::ostringstream os;
    os << "  drawn for this run (replay one with --case NAME):";
    for (const CaseSpec& c : added) os << " " << c.name << " " << shape_text(spec_, c.dims);
    random_note_ = os.str() + "\n";
  }
  return std::nullopt;
}

bool Session::open_device(JudgeOutcome* outcome) {
  std::string err;
  gpu_ = opts_.action != Action::kCheck && cuda_device_count(&no_gpu_reason_) > 0;
  if (!gpu_) return true;
  if (!query_device(opts_.device, &device_, &err))
    return fail(outcome, usage("--device " + std::to_string(opts_.device) + ": " + err));
  device_.arch = arch_for_compute_capability(device_.cc_major, device_.cc_minor);
  // The judge's own GPU work (oracle, yardstick) runs on the judged device too.
  cudaError_t e = cudaSetDevice(opts_.device);
  if (e != cudaSuccess) {
    return fail(outcome,
                usage("--device " + std::to_string(opts_.device) + ": " + cudaGetErrorString(e)));
  }
  return true;
}

ExitCode Session::check_python() {
  reporter().banner(opts_.solution_path, std::string(" (") + language_name(language_) + ")");
  PythonCheck pc;
  std::string err;
  if (!check_python_solution(spec_, opts_.solution_path, &pc, &err))
    return fail({ExitCode::kInternal, err});
  if (!pc.ok) return fail({ExitCode::kCompileError, pc.error});
  const bool check = opts_.action == Action::kCheck;
  if (check) {
    for (const std::string& m : pc.missing) log_ << "note     " << m << "\n";
    log_ << "check    ok: python3 " << pc.python << " parses it and " << spec_.function
         << "() takes the spec's parameters\n";
    return ExitCode::kPassed;
  }
  if (opts_.action == Action::kSanitize || opts_.action == Action::kProfile) {
    return fail(usage(std::string("--action ") + action_name(opts_.action) +
                      ": not for Python solutions (compute-sanitizer and ncu see python3, not "
                      "solve()); test, run, submit and sweep judge them"));
  }
  python_missing_ = pc.missing;  // an error once a GPU is found (run())
  std::error_code ec;
  compiled_.ok = true;
  compiled_.so_path = std::filesystem::absolute(opts_.solution_path, ec).string();
  compiled_.source_sha256 = sha256_hex(source_);
  log_ << "python   " << pc.python << "  sha256 " << compiled_.source_sha256.substr(0, 12)
       << "  (the Python worker: python3 hosting the CUDA worker's protocol)\n";
  return ExitCode::kPassed;
}

bool Session::compile_step(JudgeOutcome* outcome) {
  std::string err;
  CompileOptions copts;
  copts.arch = !opts_.arch.empty() ? opts_.arch : gpu_ ? device_.arch : "sm_90a";
  copts.cache_dir = opts_.cache_dir;
  copts.include_dirs = opts_.include_dirs;
  copts.extra_flags = opts_.nvcc_flags;
  device_.arch = copts.arch;

  reporter().banner(opts_.solution_path, "");
  progress("compile  ...");
  const bool compiled = compile_solution(spec_, opts_.solution_path, copts, &compiled_, &err);
  nvcc_version_ = compiled_.nvcc_version;  // from the compile's own nvcc --version
  if (!compiled) {
    end_progress();
    return fail(outcome, {compiled_.usage_error ? ExitCode::kUsage : ExitCode::kInternal, err});
  }
  end_progress();
  reporter().compiled(compiled_, copts.arch);
  if (!compiled_.ok) outcome->code = ExitCode::kCompileError;
  return compiled_.ok;
}

nlohmann::json Session::record_json(const std::vector<TestResult>& tests,
                                    const std::vector<BenchmarkResult>& benches, const Score& score,
                                    bool all_passed) const {
  nlohmann::json tests_j = nlohmann::json::array(), benches_j = nlohmann::json::array();
  for (const TestResult& t : tests) tests_j.push_back(to_json(t));
  for (const BenchmarkResult& b : benches) benches_j.push_back(to_json(b));
  nlohmann::json headers = nlohmann::json::array();
  std::error_code ec;
  const std::string cwd = std::filesystem::current_path(ec).string();
  for (const HeaderHash& h : compiled_.headers) {
    headers.push_back(
        {{"path", recorded_header_path(h.path, ec ? "" : cwd)}, {"sha256", h.sha256}});
  }
  nlohmann::json record = {
      {"schema", kRecordSchema},
      {"judge_version", FP4ARENA_VERSION},
      {"action", action_name(opts_.action)},
      {"created_utc", utc_now()},
      {"challenge", {{"name", spec_.name}, {"spec_version", spec_.spec_version}}},
      {"metric",
       {{"name", spec_.metric.name()},
        {"unit", spec_.metric.unit()},
        {"workload", spec_.metric.workload()},
        {"expression", spec_.metric.expression}}},
      {"limit",
       {{"name", limit_name(spec_.limit)}, {"value", limit()}, {"unit", spec_.metric.unit()}}},
      {"solution",
       {{"path", opts_.solution_path},
        {"language", language_name(language_)},
        {"sha256", compiled_.source_sha256},
        {"author", opts_.author.empty() ? author_of(source_) : opts_.author},
        {"headers", headers},
        {"nvcc_flags", compiled_.nvcc_flags},
        {"include_dirs", compiled_.include_dirs},
        {"kernels", kernel_resources_json(compiled_.kernels)}}},
      {"device", device_to_json(device_, nvcc_version_)},
      {"buffers", buffer_mode_name(opts_.buffers)},
      {"sandbox", calls_.sandbox()},
      {"timing_method", window_method_name(opts_.window_method)},
      {"timing",
       "each sample is one window of back-to-back calls, each on fresh inputs not in the L2 "
       "(a clean flush before the window), timed by the judge's own events in its own context: "
       "its events around the calls, less the two context switches it calibrated before the "
       "solution was loaded, over the calls; the worker's own times are diagnostics; the "
       "yardstick is timed in the judge's process by the same warm-up, flush and "
       "back-to-back rule"},
      {"tests", tests_j},
      {"benchmarks", benches_j},
      {"score",
       {{"geomean", json_number_or_null(score.geomean)},
        {"valid", score.valid},
        {"reason", score.reason}}},
      {"passed", all_passed},
      {"escape_rechecks", escape_rechecks_},
      {"wall_seconds", seconds_since(t_start_)}};
  if (!opts_.cases.empty()) record["only_cases"] = opts_.cases;
  if (opts_.has_seed) record["replayed_seed"] = opts_.seed;
  return record;
}

ExitCode Session::finish(const std::vector<TestResult>& tests,
                         const std::vector<BenchmarkResult>& benches, JudgeOutcome* outcome) {
  int passed = 0, total = 0;
  bool runtime_failure = false;
  auto count = [&](Verdict v) {
    ++total;
    passed += v == Verdict::kPassed;
    runtime_failure |= is_runtime_failure(v);
  };
  std::vector<double> values;
  for (const TestResult& t : tests) count(t.verdict);
  for (const BenchmarkResult& b : benches) {
    count(b.verdict);
    if (b.value) values.push_back(*b.value);
  }
  Score score =
      compute_score(values, total, passed, limit(), limit_name(spec_.limit), spec_.metric.unit());
  // --action test times nothing, and neither does a run whose --case picked no benchmark (a
  // submit always runs every benchmark).
  const bool tests_only = opts_.action == Action::kTest;
  const bool all_passed = run_passed(passed, total, score, !tests_only && !benches.empty());
  outcome->record = record_json(tests, benches, score, all_passed);
  reporter().score(score, tests_only);
  reporter().result(all_passed, passed, total, seconds_since(t_start_));
  if (!fatal_.empty()) return fail_internal(fatal_);
  if (runtime_failure) return ExitCode::kRuntimeError;
  return all_passed ? ExitCode::kPassed : ExitCode::kFailed;
}

bool Session::write_record(JudgeOutcome* outcome) {
  std::string err;
  std::string path = opts_.output_path;
  if (path.empty()) {
    path = record_path(opts_.results_dir, spec_.name, device_.name, opts_.solution_path,
                       compiled_.source_sha256);
    if (!make_dirs(path.substr(0, path.rfind('/')), &err)) {
      outcome->code = fail_internal(err);
      return false;
    }
  }
  if (!write_file_atomic(path, outcome->record.dump(2) + "\n", &err)) {
    outcome->code = fail_internal(err);
    return false;
  }
  outcome->record_path = path;
  reporter().record(path);
  return true;
}

JudgeOutcome Session::run() {
  JudgeOutcome outcome;
  if (!load_challenge(&outcome)) return outcome;
  if (opts_.action == Action::kDump) {
    outcome.code = run_dump();
    return outcome;
  }
  std::string err;
  if (!read_file(opts_.solution_path, &source_, &err)) {
    fail(&outcome, usage("--solution: " + err));
    return outcome;
  }
  if (!check_output_paths(&outcome) || !check_window_method(&outcome)) return outcome;
  Language lang = language_of(opts_.solution_path, source_);
  if (!opts_.language.empty()) parse_language(opts_.language, &lang);
  language_ = lang;
  calls_.use_language(lang);
  if (is_python(lang)) {
    outcome.code = check_python();
    if (outcome.code != ExitCode::kPassed || opts_.action == Action::kCheck) return outcome;
    if (!open_device(&outcome)) return outcome;
  } else {
    // Device first: it decides the architecture the solution is compiled for.
    if (!open_device(&outcome)) return outcome;
    if (!compile_step(&outcome)) return outcome;
  }
  if (opts_.action == Action::kCheck) {
    log_ << "check    ok: compiles and " << spec_.function << "() matches the signature\n";
    outcome.code = ExitCode::kPassed;
    return outcome;
  }
  if (!gpu_) {
    reporter().no_gpu(no_gpu_reason_, is_python(language_));
    outcome.code = ExitCode::kNoGpu;
    return outcome;
  }
  if (!python_missing_.empty()) {
    outcome.code = fail({ExitCode::kInternal, python_missing_.front()});
    return outcome;
  }
  reporter().device(device_, limit());
  size_shared_memory();
  if (opts_.action == Action::kSweep) {
    outcome.code = run_sweep(&outcome);
    return outcome;
  }

  if (opts_.action == Action::kSanitize || opts_.action == Action::kProfile) {
    outcome.code = run_tool(&outcome);
    return outcome;
  }
  run_cases(&outcome);
  return outcome;
}

// --output (submit) and --out (sweep) are usable before anything is compiled or run.
bool Session::check_output_paths(JudgeOutcome* outcome) {
  std::string err;
  if (opts_.action == Action::kSubmit && !opts_.output_path.empty() &&
      !check_output_path(opts_.output_path, &err)) {
    return fail(outcome, usage("--output: " + err));
  }
  if (opts_.action == Action::kSweep && !check_sweep_dir(sweep_dir(), &err))
    return fail(outcome, usage("--out: " + err));
  return true;
}

// Records and sweeps are made with the judge's own window method only (verdict.h).
bool Session::check_window_method(JudgeOutcome* outcome) {
  if ((opts_.action != Action::kSubmit && opts_.action != Action::kSweep) ||
      opts_.window_method == kJudgeWindowMethod) {
    return true;
  }
  return fail(outcome,
              usage(std::string("window method ") + window_method_name(opts_.window_method) +
                    ": records and sweeps are made with " + kTimingMethod + " only"));
}

// The worker's shared memory: the largest layout of the cases this action runs.
void Session::size_shared_memory() {
  for (const auto* list : {&spec_.tests, &spec_.benchmarks, &sweep_shapes_}) {
    if (list == &sweep_shapes_ && opts_.action != Action::kSweep) continue;
    if (list != &sweep_shapes_ && opts_.action == Action::kSweep) continue;
    for (const CaseSpec& c : *list) {
      if (selected(c)) calls_.need_shared_bytes(layout_for(spec_, c.dims).total);
    }
  }
}

// sanitize and profile: the action under its tool, and a record of what it found.
ExitCode Session::run_tool(JudgeOutcome* outcome) {
  nlohmann::json record = {
      {"schema", std::string("fp4arena.") + action_name(opts_.action) + ".v2"},
      {"judge_version", FP4ARENA_VERSION},
      {"created_utc", utc_now()},
      {"challenge", {{"name", spec_.name}, {"spec_version", spec_.spec_version}}},
      {"solution", {{"path", opts_.solution_path}, {"sha256", compiled_.source_sha256}}},
      {"device", device_to_json(device_, nvcc_version_)}};
  const ExitCode code =
      opts_.action == Action::kSanitize ? run_sanitize(&record) : run_profile(&record);
  calls_.stop();
  reap_orphans();
  for (const std::string& f : calls_.tool_logs()) log_ << "tool log " << f << "\n";
  record["tool_logs"] = calls_.tool_logs();
  outcome->record = record;
  return code;
}

// run and submit: the selected tests, then the selected benchmarks, then the record.
void Session::run_cases(JudgeOutcome* outcome) {
  // The judge's memory (expected outputs) must not be readable by the worker through
  // /proc/<pid>/mem or ptrace, even under the same user.
  prctl(PR_SET_DUMPABLE, 0);

  std::vector<TestResult> tests;
  std::vector<BenchmarkResult> benches;
  auto sel = [this](const CaseSpec& c) { return selected(c); };
  if (std::any_of(spec_.tests.begin(), spec_.tests.end(), sel)) {
    reporter().section("tests");
    log_ << random_note_;
  }
  for (const CaseSpec& c : spec_.tests) {
    if (selected(c)) tests.push_back(fatal_.empty() ? run_test(c) : not_run_test(c));
  }
  // --action test: the test cases alone, nothing timed.
  const bool timed = opts_.action != Action::kTest;
  if (timed && std::any_of(spec_.benchmarks.begin(), spec_.benchmarks.end(), sel)) {
    reporter().section("benchmarks");
  }
  for (const CaseSpec& c : spec_.benchmarks) {
    if (timed && selected(c))
      benches.push_back(fatal_.empty() ? run_benchmark(c) : not_run_benchmark(c));
  }
  calls_.stop();
  reap_orphans();
  outcome->code = finish(tests, benches, outcome);
  outcome->sample_seeds = sample_seeds_;
  if (opts_.action == Action::kSubmit) write_record(outcome);
}

}  // namespace judging

JudgeOutcome judge(const JudgeOptions& opts, std::ostream& log) {
  // Not dumpable: a worker of the judge's own user (where the judge is not root) cannot read
  // its memory, environment or stack through /proc, nor trace it.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // A window's input sets and answers are made and freed every window (harness/host_memory.h).
  keep_freed_host_memory();
  judging::Session s(opts, log);
  return s.run();
}

}  // namespace fp4arena
