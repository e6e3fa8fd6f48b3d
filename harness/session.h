// The judge's session, internal to harness/judge*.cc: the Session class (judge.cc runs
// it, judge_calls.cc judges the windows of calls its WorkerCalls makes (worker_calls.h),
// judge_cases.cc judges tests and benchmarks, judge_tools.cc runs the tools, dump and sweep)
// and the small types and helpers they share. Nothing outside those files includes it.
#pragma once

#include "harness/judge.h"
#include "harness/python_solution.h"

#include <cuda_runtime.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <iomanip>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "harness/call_window.h"
#include "harness/challenge.h"
#include "harness/device_info.h"
#include "harness/dump.h"
#include "harness/ipc.h"
#include "harness/pre_call.h"
#include "harness/process.h"
#include "harness/record.h"
#include "harness/reporter.h"
#include "harness/spec.h"
#include "harness/sweep_report.h"
#include "harness/text.h"
#include "harness/timing.h"
#include "harness/tools.h"
#include "harness/validate.h"
#include "harness/verdict.h"
#include "harness/worker_calls.h"

namespace fp4arena {
namespace judging {

// Above this much work the oracle runs on the GPU (the CPU oracle still checks the GPU
// oracle in the test suite).
constexpr double kGpuOracleWorkload = 2e9;

// A step's failure, or none (harness/judge.h).
using Failure = std::optional<JudgeError>;
inline JudgeError usage(std::string message) {
  return {ExitCode::kUsage, std::move(message)};
}

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

inline std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// A judged window of calls.
struct WindowResult {
  Decision decision;
  std::vector<OutputReport> outputs;  // of the failing call (or the last call checked)
  int calls = 0;
  int failed_call = -1;  // 0-based index in the window of the call the decision is about
  WindowClock clock;
  double judge_call_ms = 0;    // per call, the judge's own clock (verdict.h window_call_ms)
  double worker_event_ms = 0;  // per call, the worker's own events (a diagnostic)
  double host_call_ms = 0;     // per call, the worker's host time queueing (a diagnostic)
  double delivery_model_ms = 0, snapshot_model_ms = 0;
  bool queued_late = false;
  double check_s = 0;  // the judge's time checking the outputs against the oracle
};

// One set's answers, checked.
struct SetCheck {
  Decision decision;
  std::vector<OutputReport> outputs;
};

// What a benchmark's sampled windows showed, beside their per-call times.
struct WindowSamples {
  std::vector<WindowClock> clocks;
  std::vector<double> worker_ms, host_ms;
  int queued_late = 0;
  int calls_per_window = 1;
  int calls = 0;             // every call made, warm-up windows included
  double fastest_ms = 1e30;  // the fastest per-call time of the warm-up windows
  JudgeCost cost;            // the judge's own time, warm-up windows included
  void add(const WindowResult& w) {
    clocks.push_back(w.clock);
    worker_ms.push_back(w.worker_event_ms);
    host_ms.push_back(w.host_call_ms);
    queued_late += w.queued_late;
  }
};

class Session {
 public:
  Session(const JudgeOptions& opts, std::ostream& log) : opts_(opts), log_(log) {}

  JudgeOutcome run();

 private:
  // Steps of run(), in order; each returns false with outcome->code set when the run ends.
  bool load_challenge(JudgeOutcome* outcome);
  Failure check_spec_cases() const;
  Failure load_shapes(std::vector<CaseSpec>* out);
  Failure choose_sweep_shapes();
  Failure check_named_cases();
  bool check_output_paths(JudgeOutcome* outcome);
  bool check_window_method(JudgeOutcome* outcome);
  void size_shared_memory();
  ExitCode run_tool(JudgeOutcome* outcome);
  void run_cases(JudgeOutcome* outcome);
  // The spec's random_tests: drawn afresh under run and submit, or replayed by --case NAME.
  Failure add_random_tests();
  bool open_device(JudgeOutcome* outcome);
  bool compile_step(JudgeOutcome* outcome);
  // A Python solution (harness/python_solution.h): checked by python3's parser, then, for
  // test, run, submit and sweep, judged through the Python worker. kPassed when the run
  // goes on (or, under check, is over).
  ExitCode check_python();
  ExitCode finish(const std::vector<TestResult>& tests, const std::vector<BenchmarkResult>& benches,
                  JudgeOutcome* outcome);
  // The submit record (schema kRecordSchema, read back by harness/record.h's parse_record).
  nlohmann::json record_json(const std::vector<TestResult>& tests,
                             const std::vector<BenchmarkResult>& benches, const Score& score,
                             bool all_passed) const;
  bool write_record(JudgeOutcome* outcome);

  // Judging windows of calls (judge_calls.cc); calls_ makes the calls.
  // A worker started if none runs; a failed start as the verdict of the case that needed it.
  bool start_or_fail(WindowResult* r);
  // Sends one window of calls, one per input set, and judges every call: integrity, then
  // every output against the oracle (the first failing call decides). `timed`: a benchmark
  // window (its clock is the figure); untimed windows of one call with outputs that have no
  // NaN poison are made twice, with complementary poison.
  WindowResult judge_window(const CaseSpec& c, const std::vector<ProblemData>& ins, bool timed);
  bool check_set(const ProblemData& in, const std::vector<std::vector<uint8_t>>& got,
                 const std::vector<Poison>& poisons,
                 const std::vector<std::vector<uint8_t>>* second,
                 const std::vector<Poison>& second_poisons, SetCheck* out, std::string* err);
  Decision confirm_escape(const CaseSpec& c, const std::vector<ProblemData>& ins,
                          const Layout& layout, const std::vector<Poison>& poisons,
                          const Decision& first, RawWindow* raw);
  // Checks every set's outputs of a window against the oracle; decides *r.
  // `first`: the outputs of a window made twice (empty: each set's own, read back).
  void check_answers(const std::vector<ProblemData>& ins, const Layout& layout,
                     const std::vector<std::vector<uint8_t>>& first,
                     const std::vector<Poison>& poisons,
                     const std::vector<std::vector<uint8_t>>* second,
                     const std::vector<Poison>& second_poisons, WindowResult* r);
  // Whether the oracle runs on the GPU for a case of these dims (large workloads, with a GPU).
  bool gpu_oracle(const std::map<std::string, int64_t>& dims) const;
  // The oracle's answer for every output; given what solve() wrote (`written`, by output
  // name), the challenge's answer for the choices it made (Challenge::condition). Every
  // output then has an answer of the right size for its comparison.
  bool compute_expected(const ProblemData& in, Expected* out, std::string* err,
                        const std::map<std::string, std::vector<uint8_t>>* written = nullptr);
  // `count` input sets of case `c` into *ins, seeds into *seeds: the first from
  // `first_seed` when `use_first_seed`, every other from a fresh random seed.
  bool generate_sets(const CaseSpec& c, int count, bool use_first_seed, uint64_t first_seed,
                     std::vector<ProblemData>* ins, std::vector<uint64_t>* seeds, std::string* err);
  // The case's roofline time on this device (spec.h, speed_of_light): for a spec whose bytes
  // come from the inputs, the mean of the challenge's count over `ins` (the calls timed last).
  SpeedOfLight case_speed_of_light(const CaseSpec& c, const std::vector<ProblemData>& ins) const;
  // A benchmark's verdict and figures from its samples and its last window.
  void fill_benchmark(const SampleRun& run, const WindowSamples& w, const WindowResult& last,
                      BenchmarkResult* out) const;
  ConsoleReporter reporter() const { return ConsoleReporter(log_, spec_); }

  // Cases. A case that never ran (the judge failed before it) is not_run, with fatal_.
  TestResult run_test(const CaseSpec& c);
  void not_run(const CaseSpec& c, CaseResult* r) const;  // the case's name, seed, dims, fatal_
  TestResult not_run_test(const CaseSpec& c) const;
  BenchmarkResult run_benchmark(const CaseSpec& c);
  BenchmarkResult not_run_benchmark(const CaseSpec& c) const;
  // The yardstick timed on `ins` as the case was; none (the reason printed) where it cannot
  // be. `mine`: the case's value, for the ratio.
  std::optional<YardstickResult> time_yardstick(const std::vector<ProblemData>& ins,
                                                const TimingSpec& timing, double workload,
                                                std::optional<double> mine);
  ExitCode run_sanitize(nlohmann::json* record);
  ExitCode run_profile(nlohmann::json* record);
  ExitCode run_dump();
  // --action sweep: every shape of sweep_shapes_ timed like a --action run benchmark, the
  // yardstick beside it, then sweep.json, sweep.html and sweep.svg.
  ExitCode run_sweep(JudgeOutcome* outcome);
  // The sweep's header fields; one shape's entry from its benchmark's result `j`; the files.
  SweepReport sweep_report(const std::string& timing_text) const;
  SweepShape sweep_shape(const CaseSpec& c, const BenchmarkResult& b);
  ExitCode write_sweep(const SweepReport& rep, JudgeOutcome* outcome);
  std::string sweep_dir() const {
    return opts_.sweep_dir.empty() ? "sweep/" + spec_.name : opts_.sweep_dir;
  }
  // The timing rule of a benchmark for this action: the spec's for submit, a short one
  // otherwise.
  TimingSpec timing_for_action() const;
  // The options that replay a failed call of case `c` ("--case NAME --seed S").
  std::string replay_args(const CaseSpec& c, uint64_t seed) const {
    std::string a = "--case " + c.name + " --seed " + std::to_string(seed);
    if (opts_.action != Action::kSweep && opts_.shapes_path.empty()) return a;
    return std::string("--action ") + action_name(opts_.action) + " " +
           (opts_.shapes_path.empty() ? "" : "--shapes " + opts_.shapes_path + " ") + a;
  }

  bool selected(const CaseSpec& c) const;
  uint64_t case_seed(const CaseSpec& c) const { return opts_.has_seed ? opts_.seed : c.seed; }
  void progress(const std::string& line);
  void end_progress();
  // The progress line of a benchmark's sampling: warm-up, or the sample, median and rse.
  void sampling_progress(const std::string& name, const SampleRun& r, bool warm);
  // Prints `e` and returns its code: how a step that ends the run says why.
  ExitCode fail(const JudgeError& e);
  // The same for a step that reports through `outcome`: sets its code, returns false.
  bool fail(JudgeOutcome* outcome, const JudgeError& e) {
    outcome->code = fail(e);
    return false;
  }
  ExitCode fail_internal(const std::string& what);  // "internal error: WHAT", kInternal
  double limit() const { return device_.limit(spec_.limit); }
  double window_target_ms() const { return std::clamp(opts_.window_target_ms, 0.01, 100.0); }

  const JudgeOptions& opts_;
  std::ostream& log_;
  Clock::time_point t_start_ = Clock::now();
  Spec spec_;
  std::unique_ptr<Challenge> challenge_;
  std::string source_;
  Language language_ = Language::kCuda;
  std::vector<std::string> python_missing_;  // what the Python worker needs and python3 lacks
  CompileResult compiled_;                   // a Python solution: its path and sha256 only
  DeviceInfo device_;
  std::string nvcc_version_;
  std::string no_gpu_reason_;
  // The worker, the judge's window on its buffers and the judge's clock (worker_calls.h).
  WorkerCalls calls_{opts_, spec_, compiled_};
  bool gpu_ = false;
  bool progress_shown_ = false;
  bool tty_ = isatty(2);
  std::string fatal_;        // set when the run cannot go on (worker cannot start, oracle error)
  int escape_rechecks_ = 0;  // windows made again for a busy-after reading not repeated
  // --action sweep: the shapes and where they came from.
  std::vector<CaseSpec> sweep_shapes_;
  std::string sweep_source_;
  std::string progress_tag_;  // put before every progress line ("[3/11] ")
  std::string random_note_;   // the random tests drawn for this run, printed above the tests
  // Per benchmark, each sample's calls' seeds (JudgeOutcome::sample_seeds).
  std::map<std::string, std::vector<std::vector<uint64_t>>> sample_seeds_;
};

}  // namespace judging
}  // namespace fp4arena
