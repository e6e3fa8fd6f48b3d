// The judge's session, internal to harness/judge*.cc: the Session class (judge.cc runs
// it, judge_calls.cc makes its calls to the worker, judge_cases.cc judges tests and
// benchmarks, judge_tools.cc runs the tools, dump and sweep) and the small types and helpers
// they share. Nothing outside those files includes it.
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
#include "harness/worker_client.h"

namespace fp4arena {
namespace judging {

using Clock = std::chrono::steady_clock;

constexpr size_t kCanaryBytes = 4096;
constexpr size_t kAlign = 4096;
// Above this much work the oracle runs on the GPU (the CPU oracle still checks the GPU
// oracle in the test suite).
constexpr double kGpuOracleWorkload = 2e9;
// Rounds of calibration windows (no kernel, one null kernel, nine) per worker start.
constexpr int kCalibrationWindows = 11;
// While its window runs, the judge looks this long at a time for a message from the worker
// (only a late "queued" is allowed; a failure's reply or a closed channel ends the window).
constexpr double kWindowPollSeconds = 0.001;

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

// Unpredictable bytes from the kernel (seeds, canaries, poison): nothing the worker can
// observe lets it guess the next ones.
inline void random_bytes(void* out, size_t n) {
  uint8_t* p = static_cast<uint8_t*>(out);
  while (n > 0) {
    ssize_t got = getrandom(p, n, 0);
    if (got <= 0) continue;  // EINTR; getrandom never fails otherwise for these sizes
    p += got;
    n -= size_t(got);
  }
}

inline uint64_t random_u64() {
  uint64_t v;
  random_bytes(&v, sizeof v);
  return v >> 1;  // seeds stay below 2^63 so that records and --seed carry them exactly
}

// One buffer of a call in shared memory: [canary | payload | canary].
struct Slot {
  const ParamSpec* param;
  size_t offset;   // of the leading canary
  size_t payload;  // bytes
};

struct Layout {
  std::vector<Slot> slots;  // buffer parameters in signature order
  size_t total = 0;
};

inline Layout layout_for(const Spec& spec, const std::map<std::string, int64_t>& dims) {
  Layout l;
  for (const ParamSpec& p : spec.params) {
    if (!p.is_buffer()) continue;
    size_t bytes = buffer_bytes(p, dims);
    l.slots.push_back({&p, l.total, bytes});
    l.total += (2 * kCanaryBytes + bytes + kAlign - 1) / kAlign * kAlign;
  }
  return l;
}

// One window's calls as the judge received them, before the answers are checked.
struct RawWindow {
  CallFacts facts;      // how the window ended, the worker's word, the first integrity failure
  int failed_set = -1;  // the set whose canary or input check failed
  WindowClock clock;    // the judge's events (harness/call_window.h)
  double delivery_model_ms = 0, snapshot_model_ms = 0;
  double worker_event_ms = 0, host_call_ms = 0;  // the worker's word, for the whole window
  bool queued_late = false;   // solve() had not returned kQueueWaitSeconds after go was asked
  bool judge_failed = false;  // the judge's own CUDA work failed (fatal_ says how)
};

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
  void add(const WindowResult& w) {
    clocks.push_back(w.clock);
    worker_ms.push_back(w.worker_event_ms);
    host_ms.push_back(w.host_call_ms);
    queued_late += w.queued_late;
  }
};

// What a window's prepare request and the judge's window need, planned from its inputs.
struct WindowPlan {
  std::vector<uint8_t> canary;
  std::vector<WindowBuffer> buffers;                // one set's buffers, in layout order
  std::vector<std::vector<const uint8_t*>> inputs;  // per set, its input payloads
  std::vector<size_t> offsets;                      // each buffer's offset in a set's image
  nlohmann::json prepare;                           // the worker's prepare request
};

// Part by part medians of windows' GPU times, and their record form.
inline WindowClock median_window(const std::vector<WindowClock>& w) {
  std::vector<double> pre, call, post;
  for (const WindowClock& c : w) {
    pre.push_back(c.pre_ms);
    call.push_back(c.call_ms);
    post.push_back(c.post_ms);
  }
  return {summarize(pre).median_ms, summarize(call).median_ms, summarize(post).median_ms};
}
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
  // The Python worker's options (harness/worker_client.h) for start_worker().
  void python_worker(WorkerOptions* w) const;
  ExitCode finish(const std::vector<TestResult>& tests, const std::vector<BenchmarkResult>& benches,
                  JudgeOutcome* outcome);
  // The submit record (schema kRecordSchema, read back by harness/record.h's parse_record).
  nlohmann::json record_json(const std::vector<TestResult>& tests,
                             const std::vector<BenchmarkResult>& benches, const Score& score,
                             bool all_passed) const;
  bool write_record(JudgeOutcome* outcome);

  // Calls.
  // Starts a worker, calibrates the judge's clock on it (before user code is loaded) and
  // loads the solution. False on failure: *load_failed with *load_facts set when the
  // solution itself failed to load (its constructors crashed, exited or hung); otherwise
  // *err says why the worker could not start (the judge's failure).
  bool start_worker(std::string* err, bool* load_failed = nullptr, CallFacts* load_facts = nullptr);
  // The calibration of the judge's window on a fresh worker (WindowCalibration), before any
  // user code is loaded. False + *err when the worker failed.
  bool calibrate_window(double timeout, std::string* err);
  bool start_calibrated_worker(WorkerOptions w, double timeout, std::string* err);
  // A failed start as the verdict of the case that needed the worker.
  bool start_or_fail(WindowResult* r);
  RawWindow send_window(const CaseSpec& c, const std::vector<ProblemData>& ins,
                        const Layout& layout, const std::vector<Poison>& poisons);
  // The window's buffers, canary, inputs and prepare request (under a tool: the one call's
  // buffers written into shared memory).
  WindowPlan plan_window(const Layout& layout, const std::vector<ProblemData>& ins,
                         const std::vector<Poison>& poisons) const;
  // After the worker's prepare reply: its handles mapped, every set filled and the inputs
  // staged. False with raw->facts (the worker's fault) or raw->judge_failed set.
  bool load_window(const CallReply& reply, const WindowPlan& plan, int sets, RawWindow* raw);
  // One window of calls in the worker (harness/call_window.h): the request, its "queued"
  // answer (or kQueueWaitSeconds), the window, "settle", the final reply. *clock: the
  // judge's events; *queued_late: solve() had not returned in time (it synchronises).
  CallReply run_window(nlohmann::json request, double timeout, WindowClock* clock,
                       bool* queued_late);
  // run_window()'s wait for its window on the GPU, watching the worker's channel until
  // `deadline`; kOk once the window is done (*queued set when a late "queued" came). On any
  // other outcome the worker is gone and the window has been released.
  CallReply await_window(uint32_t seq, double timeout, Clock::time_point deadline, bool* queued);
  // The worker's sync buffer named in a prepare reply, mapped (false + *err: the worker's
  // fault).
  bool map_sync(const CallReply& reply, std::string* err);
  // The worker's prepare request: buffers, one argument list per set, and whether the
  // judge's window handles the buffers.
  nlohmann::json prepare_request(const nlohmann::json& buffers, const nlohmann::json& set_args,
                                 int sets) const;
  // A CUDA failure of the judge's own work: the run cannot go on (fatal_).
  void set_judge_cuda_failure(const char* step, cudaError_t e);
  // The judge's pre-call work (warm-up, L2 flush) in its own context: the yardstick's, and
  // the flush inside every call window. Null with *err set when it cannot be made.
  PreCall* judge_pre_call(std::string* err);
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
  // The oracle's answer for every output; given what solve() wrote (`written`, by output
  // name), the challenge's answer for the choices it made (Challenge::condition). Every
  // output then has an answer of the right size for its comparison.
  // Whether the oracle runs on the GPU for a case of these dims (large workloads, with a GPU).
  bool gpu_oracle(const std::map<std::string, int64_t>& dims) const;
  bool compute_expected(const ProblemData& in, Expected* out, std::string* err,
                        const std::map<std::string, std::vector<uint8_t>>* written = nullptr);
  // `count` input sets of case `c` into *ins, seeds into *seeds: the first from
  // `first_seed` when `use_first_seed`, every other from a fresh random seed.
  bool generate_sets(const CaseSpec& c, int count, bool use_first_seed, uint64_t first_seed,
                     std::vector<ProblemData>* ins, std::vector<uint64_t>* seeds, std::string* err);
  // How many calls a window of this layout makes when one call takes `per_call_ms`: enough
  // for window_target_ms() of calls, within the memory budget and kMaxWindowCalls.
  int calls_for(double per_call_ms, const Layout& layout) const;
  // One set's argument list for the worker (buffers by index, dims, scalars).
  nlohmann::json call_args(const ProblemData& in,
                           const std::map<std::string, int>& buffer_index) const;
  // The worker's own figures from its final reply (diagnostics; a malformed one ends the
  // window as the worker's failure).
  void read_worker_word(const CallReply& reply, RawWindow* raw) const;
  // Every set's canaries and inputs after the window; the first failure goes into raw.
  void check_integrity(const Layout& layout, const std::vector<ProblemData>& ins,
                       const std::vector<uint8_t>& canary, RawWindow* raw) const;
  // Set `set`'s outputs as read back, in output order.
  std::vector<std::vector<uint8_t>> outputs_of(const Layout& layout, int set) const;
  // Set `set`'s buffers after a window, at their layout offsets.
  const uint8_t* set_image(int set) const {
    return window_ ? window_->host_image(set) : worker_->shm();
  }
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
  std::unique_ptr<WorkerProcess> worker_;
  std::unique_ptr<PreCall> judge_pre_call_;  // see judge_pre_call()
  // The judge's hands on the worker's buffers (harness/call_window.h); null under a tool.
  std::unique_ptr<CallWindow> window_;
  size_t shm_bytes_ = 0;
  bool gpu_ = false;
  bool progress_shown_ = false;
  bool tty_ = isatty(2);
  std::string fatal_;  // set when the run cannot go on (worker cannot start, oracle error)
  // A tool the worker runs under; "{LOG}" in it becomes a fresh log file per worker start.
  std::vector<std::string> wrapper_;
  std::vector<std::string> tool_logs_;
  double timeout_scale_ = 1;
  double exit_grace_seconds_ = 2;
  // The judge's window calibrated before the solution was loaded (harness/verdict.h).
  WindowCalibration calib_;
  size_t window_budget_bytes_ = 0;  // device memory a window's sets may take, all copies counted
  uint32_t window_seq_ = 0;         // the last window's sequence number (its go/done words)
  int escape_rechecks_ = 0;         // windows made again for a busy-after reading not repeated
  std::string sandbox_;             // what the worker's sandbox enforced
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
