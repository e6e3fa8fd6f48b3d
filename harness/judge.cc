#include "harness/judge.h"

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
#include "harness/spec.h"
#include "harness/sweep_report.h"
#include "harness/timing.h"
#include "harness/tools.h"
#include "harness/validate.h"
#include "harness/verdict.h"
#include "harness/worker_client.h"

namespace fp4arena {

const char* action_name(Action a) {
  switch (a) {
    case Action::kCheck:
      return "check";
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
  for (Action a : {Action::kCheck, Action::kRun, Action::kSubmit, Action::kSanitize,
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

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kCanaryBytes = 4096;
constexpr size_t kAlign = 4096;
// Above this much work the oracle runs on the GPU (the CPU oracle still checks the GPU
// oracle in the test suite).
constexpr double kGpuOracleWorkload = 2e9;
// Rounds of calibration windows (no kernel, one null kernel, nine) per worker start.
constexpr int kCalibrationWindows = 11;
// How long the judge waits for the worker to queue a window's calls before it opens the
// window anyway (a solve() that waits for the device cannot return before the go word).
constexpr double kQueueWaitSeconds = 0.5;
// While its window runs, the judge looks this long at a time for a message from the worker
// (only a late "queued" is allowed; a failure's reply or a closed channel ends the window).
constexpr double kWindowPollSeconds = 0.001;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string fmt(double v, int prec = 3) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string slug(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "unknown" : out;
}

std::string stem_of(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = base.rfind('.');
  return dot == std::string::npos ? base : base.substr(0, dot);
}

// Unpredictable bytes from the kernel (seeds, canaries, poison): nothing the worker can
// observe lets it guess the next ones.
void random_bytes(void* out, size_t n) {
  uint8_t* p = static_cast<uint8_t*>(out);
  while (n > 0) {
    ssize_t got = getrandom(p, n, 0);
    if (got <= 0) continue;  // EINTR; getrandom never fails otherwise for these sizes
    p += got;
    n -= size_t(got);
  }
}

uint64_t random_u64() {
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

Layout layout_for(const Spec& spec, const std::map<std::string, int64_t>& dims) {
  Layout l;
  for (const ParamSpec& p : spec.params) {
    if (!p.is_buffer()) continue;
    size_t bytes = buffer_bytes(p, dims);
    l.slots.push_back({&p, l.total, bytes});
    l.total += (2 * kCanaryBytes + bytes + kAlign - 1) / kAlign * kAlign;
  }
  return l;
}

CallEnd call_end_of(CallOutcome o) {
  switch (o) {
    case CallOutcome::kOk:
      return CallEnd::kOk;
    case CallOutcome::kCudaError:
      return CallEnd::kCudaError;
    case CallOutcome::kCrashed:
      return CallEnd::kCrashed;
    case CallOutcome::kEarlyExit:
      return CallEnd::kEarlyExit;
    case CallOutcome::kTimeout:
      return CallEnd::kTimeout;
    case CallOutcome::kWorkerError:
      return CallEnd::kWorkerError;
  }
  return CallEnd::kWorkerError;
}

// A typed field of the worker's reply; a missing or mistyped one makes the reply malformed.
bool reply_number(const nlohmann::json& r, const char* key, double* out, std::string* why) {
  auto it = r.find(key);
  if (it == r.end() || !it->is_number() || !std::isfinite(it->get<double>())) {
    *why = std::string("malformed reply: field '") + key + "' missing or not a finite number";
    return false;
  }
  *out = it->get<double>();
  return true;
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

std::string read_logs(const std::vector<std::string>& logs, size_t first) {
  std::string all;
  for (size_t i = first; i < logs.size(); ++i) {
    std::string text, ignored;
    if (read_file(logs[i], &text, &ignored)) all += text + "\n";
  }
  return all;
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
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
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

class Session {
 public:
  Session(const JudgeOptions& opts, std::ostream& log) : opts_(opts), log_(log) {}

  JudgeOutcome run();

 private:
  // Steps of run(), in order; each returns false with outcome->code set when the run ends.
  bool load_challenge(JudgeOutcome* outcome);
  bool check_output_paths(JudgeOutcome* outcome);
  void size_shared_memory();
  ExitCode run_tool(JudgeOutcome* outcome);
  void run_cases(JudgeOutcome* outcome);
  // The spec's random_tests: drawn afresh under run and submit, or replayed by --case NAME.
  bool add_random_tests();
  bool open_device(JudgeOutcome* outcome);
  bool compile_step(JudgeOutcome* outcome);
  void print_device();
  ExitCode finish(const std::vector<nlohmann::json>& tests,
                  const std::vector<nlohmann::json>& benches, JudgeOutcome* outcome);
  // The submit record (schema kRecordSchema, read back by harness/record.h's parse_record).
  nlohmann::json record_json(const std::vector<nlohmann::json>& tests,
                             const std::vector<nlohmann::json>& benches, const Score& score,
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
  // A benchmark's record entry, and its lines in the summary.
  void fill_benchmark_json(const SampleRun& run, const WindowSamples& w, const WindowResult& last,
                           bool passed, Verdict v, double workload, nlohmann::json* out) const;
  void report_benchmark(const CaseSpec& c, const TimingSpec& timing, const SampleRun& run,
                        const WindowSamples& w, const WindowResult& last, bool passed, Verdict v,
                        uint64_t failed_seed);

  // Cases.
  nlohmann::json run_test(const CaseSpec& c);
  nlohmann::json run_benchmark(const CaseSpec& c);
  void time_yardstick(const std::vector<ProblemData>& ins, const TimingSpec& timing,
                      double workload, nlohmann::json* j);
  ExitCode run_sanitize(nlohmann::json* record);
  ExitCode run_profile(nlohmann::json* record);
  ExitCode run_dump();
  // --action sweep: every shape of sweep_shapes_ timed like a --action run benchmark, the
  // yardstick beside it, then sweep.json, sweep.html and sweep.svg.
  ExitCode run_sweep(JudgeOutcome* outcome);
  // The sweep's header fields; one shape's entry from its benchmark's result `j`; the files.
  SweepReport sweep_report(const std::string& timing_text) const;
  SweepShape sweep_shape(const CaseSpec& c, const nlohmann::json& j);
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
    if (opts_.action != Action::kSweep) return a;
    return "--action sweep " +
           (opts_.shapes_path.empty() ? "" : "--shapes " + opts_.shapes_path + " ") + a;
  }

  bool selected(const CaseSpec& c) const;
  uint64_t case_seed(const CaseSpec& c) const { return opts_.has_seed ? opts_.seed : c.seed; }
  void progress(const std::string& line);
  void end_progress();
  ExitCode fail_internal(const std::string& what);
  double limit() const { return device_.limit(spec_.limit); }
  double window_target_ms() const { return std::clamp(opts_.window_target_ms, 0.01, 100.0); }

  const JudgeOptions& opts_;
  std::ostream& log_;
  Clock::time_point t_start_ = Clock::now();
  Spec spec_;
  std::unique_ptr<Challenge> challenge_;
  std::string source_;
  CompileResult compiled_;
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

ExitCode Session::fail_internal(const std::string& what) {
  log_ << "fp4arena: internal error: " << what << "\n";
  return ExitCode::kInternal;
}

PreCall* Session::judge_pre_call(std::string* err) {
  if (!judge_pre_call_) {
    auto p = std::make_unique<PreCall>();
    if (!p->init(1.0, err)) return nullptr;
    judge_pre_call_ = std::move(p);
  }
  return judge_pre_call_.get();
}

// Part by part medians of windows' GPU times, and their record form.
WindowClock median_window(const std::vector<WindowClock>& w) {
  std::vector<double> pre, call, post;
  for (const WindowClock& c : w) {
    pre.push_back(c.pre_ms);
    call.push_back(c.call_ms);
    post.push_back(c.post_ms);
  }
  return {summarize(pre).median_ms, summarize(call).median_ms, summarize(post).median_ms};
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

bool Session::start_worker(std::string* err, bool* load_failed, CallFacts* load_facts) {
  if (load_failed) *load_failed = false;
  WorkerOptions w;
  w.worker_path =
      opts_.worker_path.empty() ? self_exe_dir() + "/fp4arena_worker" : opts_.worker_path;
  w.so_path = compiled_.so_path;
  w.device = opts_.device;
  w.seccomp_allowlist = opts_.seccomp_allowlist;
  // Shared memory carries the buffers only under a tool; with the judge's window it stays
  // one page.
  w.shm_bytes = wrapper_.empty() ? 4096 : shm_bytes_;
  w.exit_grace_seconds = exit_grace_seconds_;
  for (std::string arg : wrapper_) {
    if (arg == "{LOG}") {
      const char* tmp = std::getenv("TMPDIR");
      arg = std::string(tmp && *tmp ? tmp : "/tmp") + "/fp4arena-" + std::to_string(getpid()) +
            "-tool-" + std::to_string(tool_logs_.size()) + ".log";
      unlink(arg.c_str());
      tool_logs_.push_back(arg);
    }
    w.wrapper.push_back(arg);
  }
  if (!is_executable(w.worker_path)) {
    *err = "worker program not found at " + w.worker_path + " (build the fp4arena_worker target)";
    return false;
  }
  // The judge's window on the worker's buffers, set up (and its copies timed) before the
  // first worker runs; the mappings of an earlier worker go with it.
  if (wrapper_.empty() && !window_) {
    PreCall* pre = judge_pre_call(err);
    if (!pre) return false;
    auto cw = std::make_unique<CallWindow>();
    if (!cw->init(pre, err)) return false;
    window_ = std::move(cw);
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    window_budget_bytes_ = std::min<size_t>(size_t(0.3 * double(free_bytes)), size_t(24) << 30);
  }
  const double timeout = timeout_scale_ * spec_.call_timeout_seconds;
  if (!start_calibrated_worker(w, timeout, err)) return false;
  sandbox_ = worker_->sandbox();
  CallReply loaded = worker_->call({{"op", "load"}}, timeout);
  if (loaded.outcome != CallOutcome::kOk) {
    if (load_failed) *load_failed = true;
    if (load_facts) {
      *load_facts = CallFacts{};
      load_facts->end = call_end_of(loaded.outcome);
      load_facts->end_detail = loaded.detail +
                               " while loading the solution (its static "
                               "constructors, or a symbol it lacks)";
    }
    *err = "the solution failed to load: " + loaded.detail;
    worker_.reset();
    return false;
  }
  return true;
}

bool Session::start_calibrated_worker(WorkerOptions w, double timeout, std::string* err) {
  for (;;) {
    if (window_) window_->unmap_all();
    worker_ = WorkerProcess::start(w, err);
    if (!worker_) return false;
    // Under compute-sanitizer or ncu timing means nothing: no window, no calibration.
    if (!window_ || calibrate_window(timeout, err)) return true;
    const bool retry = worker_->own_user();
    worker_.reset();
    if (!retry) return false;
    // The calibration is the worker's first window (CUDA IPC, the go and done words), made
    // before any user code is loaded: a worker of its own user that cannot take part in it is
    // started again as the judge's user, and the record's sandbox field says why.
    w.own_user = false;
    w.own_user_off = "its own user's worker failed the judge's calibration window: " + *err;
    err->clear();
    fatal_.clear();
  }
}

bool Session::calibrate_window(double timeout, std::string* err) {
  CallReply r = worker_->call(
      prepare_request(nlohmann::json::array(), nlohmann::json::array({nlohmann::json::array()}), 1),
      timeout);
  std::string why;
  if (r.outcome == CallOutcome::kOk && (!window_->map({}, {}, 1, &why) || !map_sync(r, &why) ||
                                        window_->stage({{}}) != cudaSuccess)) {
    r.outcome = CallOutcome::kWorkerError;
    r.detail = why.empty() ? "the judge could not stage an empty window" : why;
  }
  // Windows of no kernel, of one null kernel and of nine, interleaved: the switches are
  // (9 * one - nine) / 8 (verdict.h, switch_ms_from).
  std::vector<double> memops, one, nine;
  std::vector<WindowClock> ones;
  for (int i = 0; i < kCalibrationWindows && r.outcome == CallOutcome::kOk; ++i) {
    for (int kernels : {0, 1, 9}) {
      WindowClock clock;
      bool late = false;
      r = run_window({{"op", "calibrate"}, {"kernels", kernels}}, timeout, &clock, &late);
      if (r.outcome != CallOutcome::kOk) break;
      (kernels == 0 ? memops : kernels == 1 ? one : nine).push_back(clock.call_ms);
      if (kernels == 1) ones.push_back(clock);
    }
  }
  if (r.outcome != CallOutcome::kOk) {
    *err = "worker failed while the judge calibrated its clock: " + r.detail;
    return false;
  }
  const WindowClock m = median_window(ones);
  calib_.switch_ms = switch_ms_from(summarize(one).median_ms, summarize(nine).median_ms);
  calib_.memops_ms = summarize(memops).median_ms;
  calib_.pre_ms = m.pre_ms;
  calib_.post_ms = m.post_ms;
  return true;
}

bool Session::start_or_fail(WindowResult* r) {
  std::string err;
  bool load_failed = false;
  CallFacts facts;
  if (worker_ || start_worker(&err, &load_failed, &facts)) return true;
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

nlohmann::json Session::prepare_request(const nlohmann::json& buffers,
                                        const nlohmann::json& set_args, int sets) const {
  // With the judge's window the worker only allocates and exports; under a tool it fills
  // the buffers from shared memory.
  return {{"op", "prepare"}, {"buffers", buffers}, {"set_args", set_args},
          {"sets", sets},    {"fill", !window_},   {"fresh", opts_.buffers == BufferMode::kFresh}};
}

void Session::set_judge_cuda_failure(const char* step, cudaError_t e) {
  fatal_ = std::string("the judge's ") + step + ": " + cudaGetErrorString(e);
}

bool Session::map_sync(const CallReply& reply, std::string* err) {
  auto h = reply.data.find("sync");
  if (h == reply.data.end() || !h->is_string()) {
    *err = "malformed reply: no sync buffer handle";
    return false;
  }
  return window_->map_sync(h->get<std::string>(), err);
}

CallReply Session::await_window(uint32_t seq, double timeout, Clock::time_point deadline,
                                bool* queued) {
  // The window runs on the GPU; the worker must stay silent but for a late "queued".
  CallReply r{CallOutcome::kOk, "", {}};
  cudaError_t e;
  while ((e = window_->wait(std::min(deadline, Clock::now() + std::chrono::milliseconds(20)))) ==
         cudaErrorNotReady) {
    if (Clock::now() >= deadline) {
      worker_->kill_all();
      r = {CallOutcome::kTimeout,
           "no answer within " + std::to_string(timeout) +
               " s: its calls kept the judge's window from ending (killed)",
           {}};
      break;
    }
    CallReply m = worker_->receive(kWindowPollSeconds, false);
    if (m.outcome == CallOutcome::kTimeout) continue;
    if (m.outcome == CallOutcome::kOk && !*queued && m.data.value("op", "") == "queued") {
      *queued = true;
      continue;
    }
    if (m.outcome == CallOutcome::kOk) {
      worker_->kill_all();
      m = {CallOutcome::kWorkerError, "answered before the judge's window had ended", {}};
    }
    r = m;
    break;
  }
  if (r.outcome != CallOutcome::kOk) {
    // The worker is gone: its done word will never come, so the judge writes it.
    window_->release(seq);
    e = window_->wait(Clock::now() + std::chrono::seconds(10));
    if (e != cudaSuccess) set_judge_cuda_failure("call window", e);
    return r;
  }
  if (e != cudaSuccess) {
    set_judge_cuda_failure("call window", e);
    worker_->kill_all();
    return {CallOutcome::kWorkerError, fatal_, {}};
  }
  return r;
}

CallReply Session::run_window(nlohmann::json request, double timeout, WindowClock* clock,
                              bool* queued_late) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout));
  auto left = [&] {
    return std::max(0.0, std::chrono::duration<double>(deadline - Clock::now()).count());
  };
  *clock = WindowClock{};
  *queued_late = false;
  const uint32_t seq = ++window_seq_;
  request["seq"] = seq;
  CallReply r;
  if (!worker_->send(request, &r)) return r;
  // The worker queues its calls behind the go word, then says so. A solve() that waits for
  // the device cannot return before the go word: after kQueueWaitSeconds the window opens
  // anyway and its calls run as they come, on the judge's clock.
  r = worker_->receive(kQueueWaitSeconds, false);
  bool queued = r.outcome == CallOutcome::kOk;
  if (queued && r.data.value("op", "") != "queued") {
    worker_->kill_all();
    return {CallOutcome::kWorkerError, "answered before it had queued its calls", {}};
  }
  if (!queued && r.outcome != CallOutcome::kTimeout) return r;
  *queued_late = !queued;
  cudaError_t e = window_->open(seq);
  if (e != cudaSuccess) {
    window_->release(seq);
    set_judge_cuda_failure("call window", e);
    return {CallOutcome::kWorkerError, fatal_, {}};
  }
  r = await_window(seq, timeout, deadline, &queued);
  if (r.outcome != CallOutcome::kOk) return r;
  *clock = window_->clock();
  if (!queued) {
    r = worker_->receive(left());
    if (r.outcome != CallOutcome::kOk) return r;
    if (r.data.value("op", "") != "queued") {
      worker_->kill_all();
      return {CallOutcome::kWorkerError, "answered before it had queued its calls", {}};
    }
  }
  if (!worker_->send({{"op", "settle"}}, &r)) return r;
  r = worker_->receive(left());
  if (r.outcome == CallOutcome::kOk && r.data.value("op", "") == "queued") {
    worker_->kill_all();
    return {CallOutcome::kWorkerError, "said twice that it had queued its calls", {}};
  }
  return r;
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
  // The sets are independent (a generator is a function of its case and seed): made on
  // several threads, the first error kept.
  const int threads = std::max(1, std::min<int>(count, int(std::thread::hardware_concurrency())));
  std::vector<std::string> errs(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = t; i < count && errs[t].empty(); i += threads) {
        std::string e;
        if (!challenge_->generate(c, (*seeds)[i], &(*ins)[i], &e)) errs[t] = e.empty() ? "?" : e;
      }
    });
  }
  for (std::thread& th : pool) th.join();
  for (const std::string& e : errs) {
    if (!e.empty()) {
      *err = e;
      return false;
    }
  }
  return true;
}

int Session::calls_for(double per_call_ms, const Layout& layout) const {
  const double want = std::ceil(window_target_ms() / std::max(per_call_ms, 1e-3));
  // The worker's set, the judge's staged inputs and its snapshot of the outputs.
  const double per_set = 2.0 * double(std::max<size_t>(layout.total, 1));
  const double by_memory = std::floor(double(window_budget_bytes_) / per_set);
  return int(std::max(1.0, std::min({want, by_memory, double(kMaxWindowCalls)})));
}

WindowPlan Session::plan_window(const Layout& layout, const std::vector<ProblemData>& ins,
                                const std::vector<Poison>& poisons) const {
  WindowPlan p;
  const int sets = int(ins.size());
  // A fresh canary for every window, from the kernel's random source: it carries nothing a
  // solution could use to predict seeds or later canaries.
  p.canary.resize(kCanaryBytes);
  random_bytes(p.canary.data(), p.canary.size());
  p.inputs.resize(static_cast<size_t>(sets));
  std::map<std::string, int> buffer_index;
  nlohmann::json buffers = nlohmann::json::array();
  size_t out_i = 0;
  for (const Slot& sl : layout.slots) {
    WindowBuffer wb;
    wb.payload = sl.payload;
    wb.canary = kCanaryBytes;
    wb.output = sl.param->role != "in";
    if (wb.output) {
      wb.poison = dtype_has_nan_poison(sl.param->dtype) ? 0xFF : poisons[out_i++].byte;
    } else {
      for (int s = 0; s < sets; ++s)
        p.inputs[s].push_back(ins[s].buffers.at(sl.param->name).data());
    }
    if (!window_) {  // under a tool the one call's buffers travel through shared memory
      uint8_t* base = worker_->shm() + sl.offset;
      std::memcpy(base, p.canary.data(), kCanaryBytes);
      std::memcpy(base + kCanaryBytes + sl.payload, p.canary.data(), kCanaryBytes);
      if (wb.output) {
        std::memset(base + kCanaryBytes, wb.poison, sl.payload);
      } else {
        std::memcpy(base + kCanaryBytes, p.inputs[0].back(), sl.payload);
      }
    }
    p.buffers.push_back(wb);
    p.offsets.push_back(sl.offset);
    buffer_index[sl.param->name] = static_cast<int>(buffers.size());
    buffers.push_back({{"offset", sl.offset}, {"size", sl.payload}, {"canary", kCanaryBytes}});
  }
  nlohmann::json set_args = nlohmann::json::array();
  for (const ProblemData& in : ins) set_args.push_back(call_args(in, buffer_index));
  p.prepare = prepare_request(buffers, set_args, sets);
  return p;
}

bool Session::load_window(const CallReply& reply, const WindowPlan& plan, int sets,
                          RawWindow* raw) {
  CallFacts& f = raw->facts;
  std::vector<std::string> handles;
  auto h = reply.data.find("handles");
  std::string why = "malformed reply: no list of buffer handles";
  bool ok = h != reply.data.end() && h->is_array();
  for (size_t i = 0; ok && i < h->size(); ++i) {
    ok = (*h)[i].is_string();
    if (ok) handles.push_back((*h)[i].get<std::string>());
  }
  if (ok) ok = window_->map(handles, plan.buffers, sets, &why) && map_sync(reply, &why);
  if (!ok) {
    worker_->kill_all();
    f.end = CallEnd::kWorkerError;
    f.end_detail = why;
    return false;
  }
  cudaError_t e = window_->fill(plan.canary.data());
  const char* step = "filling of the call's buffers";
  if (e == cudaSuccess) {
    e = window_->stage(plan.inputs);
    step = "staging of the inputs";
  }
  if (e == cudaSuccess) return true;
  set_judge_cuda_failure(step, e);
  raw->judge_failed = true;
  f.end = CallEnd::kWorkerError;
  f.end_detail = fatal_;
  return false;
}

// Sends one window of calls and gathers what the replies and the buffers show about their
// integrity. With the judge's window (the normal case) the worker only allocates the
// buffers: the judge writes canaries and poison into them, delivers the inputs inside the
// timed window and reads everything back itself. Under a tool the buffers of the single call
// travel through shared memory.
RawWindow Session::send_window(const CaseSpec& c, const std::vector<ProblemData>& ins,
                               const Layout& layout, const std::vector<Poison>& poisons) {
  RawWindow raw;
  const int sets = int(ins.size());
  const WindowPlan plan = plan_window(layout, ins, poisons);
  nlohmann::json req = plan.prepare;
  req["case"] = c.name;
  const double base_timeout =
      opts_.call_timeout_seconds > 0 ? opts_.call_timeout_seconds : spec_.call_timeout_seconds;
  // The window's time limit grows with its calls (the spec's limit is per call).
  const double timeout = timeout_scale_ * base_timeout * std::max(1, sets);
  CallFacts& f = raw.facts;
  f.under_tool = !wrapper_.empty();
  CallReply reply = worker_->call(req, timeout);
  if (reply.outcome == CallOutcome::kOk && window_) {
    if (!load_window(reply, plan, sets, &raw)) return raw;
    reply = run_window({{"op", "go"}}, timeout, &raw.clock, &raw.queued_late);
    if ((raw.judge_failed = !fatal_.empty())) return raw;
  } else if (reply.outcome == CallOutcome::kOk) {
    reply = worker_->call({{"op", "go"}}, timeout);
    if (reply.outcome == CallOutcome::kOk) {
      CallReply collected = worker_->call({{"op", "collect"}}, timeout);
      if (collected.outcome != CallOutcome::kOk) reply = collected;
    }
  }
  f.end = call_end_of(reply.outcome);
  f.end_detail = reply.detail;
  if (f.end != CallEnd::kOk) return raw;
  if (window_) {
    raw.delivery_model_ms = window_->delivery_model_ms();
    raw.snapshot_model_ms = window_->snapshot_model_ms();
    cudaError_t e = window_->read_back(plan.offsets, layout.total);
    if (e != cudaSuccess) {
      set_judge_cuda_failure("read-back of the call's buffers", e);
      raw.judge_failed = true;
      f.end = CallEnd::kWorkerError;
      f.end_detail = fatal_;
      return raw;
    }
  }
  read_worker_word(reply, &raw);
  if (f.end == CallEnd::kOk) check_integrity(layout, ins, plan.canary, &raw);
  return raw;
}

nlohmann::json Session::call_args(const ProblemData& in,
                                  const std::map<std::string, int>& buffer_index) const {
  nlohmann::json args = nlohmann::json::array();
  for (const ParamSpec& p : spec_.params) {
    if (p.is_buffer()) {
      args.push_back({{"buffer", buffer_index.at(p.name)}});
    } else if (p.role == "dim") {
      args.push_back({{"int", in.dims.at(p.name)}});
    } else if (p.scalar_type == "int") {
      args.push_back({{"int", static_cast<int>(in.scalars.at(p.name))}});
    } else {
      args.push_back({{"float", static_cast<float>(in.scalars.at(p.name))}});
    }
  }
  return args;
}

void Session::read_worker_word(const CallReply& reply, RawWindow* raw) const {
  CallFacts& f = raw->facts;
  double threads_before = 0, threads_after = 0;
  std::string why;
  if (!reply_number(reply.data, "event_ms", &raw->worker_event_ms, &why) ||
      !reply_number(reply.data, "busy_after_us", &f.busy_after_us, &why) ||
      !reply_number(reply.data, "host_call_ms", &raw->host_call_ms, &why) ||
      !reply_number(reply.data, "threads_before", &threads_before, &why) ||
      !reply_number(reply.data, "threads_after", &threads_after, &why)) {
    f.end = CallEnd::kWorkerError;
    f.end_detail = why;
    return;
  }
  f.threads_before = int(threads_before);
  f.threads_after = int(threads_after);
}

void Session::check_integrity(const Layout& layout, const std::vector<ProblemData>& ins,
                              const std::vector<uint8_t>& canary, RawWindow* raw) const {
  CallFacts& f = raw->facts;
  for (int s = 0; s < int(ins.size()) && raw->failed_set < 0; ++s) {
    const uint8_t* image = set_image(s);
    for (const Slot& sl : layout.slots) {
      const uint8_t* base = image + sl.offset;
      bool front = std::memcmp(base, canary.data(), kCanaryBytes) == 0;
      bool back = std::memcmp(base + kCanaryBytes + sl.payload, canary.data(), kCanaryBytes) == 0;
      if (!front || !back) {
        f.canary_broken = std::string(back ? "before the start" : "past the end") + " of '" +
                          sl.param->name + "' (" + std::to_string(sl.payload) + " bytes)";
        raw->failed_set = s;
        break;
      }
    }
    for (const Slot& sl : layout.slots) {
      if (sl.param->role != "in" || raw->failed_set >= 0) continue;
      const std::vector<uint8_t>& orig = ins[s].buffers.at(sl.param->name);
      const uint8_t* got = image + sl.offset + kCanaryBytes;
      if (std::memcmp(got, orig.data(), sl.payload) != 0) {
        size_t first = 0;
        while (first < sl.payload && got[first] == orig[first]) ++first;
        f.input_changed = "'" + sl.param->name + "' (first changed byte at " +
                          std::to_string(first) + " of " + std::to_string(sl.payload) + ")";
        raw->failed_set = s;
      }
    }
  }
}

WindowResult Session::judge_window(const CaseSpec& c, const std::vector<ProblemData>& ins,
                                   bool timed) {
  WindowResult r;
  r.calls = int(ins.size());
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
  RawWindow raw = send_window(c, ins, layout, poisons);
  if (raw.judge_failed) {
    r.decision = {Verdict::kNotRun, fatal_};
    return r;
  }
  r.clock = raw.clock;
  r.queued_late = raw.queued_late;
  r.delivery_model_ms = raw.delivery_model_ms;
  r.snapshot_model_ms = raw.snapshot_model_ms;
  r.worker_event_ms = raw.worker_event_ms / r.calls;
  r.host_call_ms = raw.host_call_ms / r.calls;
  if (window_) {
    r.judge_call_ms =
        window_call_ms(raw.clock, calib_, raw.delivery_model_ms, raw.snapshot_model_ms, r.calls);
  }
  raw.facts.judge_call_ms = r.judge_call_ms;
  raw.facts.switch_us = window_ ? calib_.switch_ms * 1000.0 : 0.0;
  r.decision = decide_verdict(raw.facts);
  if (r.decision.verdict == Verdict::kTimingEscape) {
    r.decision = confirm_escape(c, ins, layout, poisons, r.decision, &raw);
  }
  r.failed_call = std::max(0, raw.failed_set);
  if (r.decision.verdict != Verdict::kPassed) return r;
  // A repeated window reuses the host image: the first window's outputs are kept.
  std::vector<std::vector<uint8_t>> first, second;
  if (twice) {
    first = outputs_of(layout, 0);
    RawWindow again = send_window(c, ins, layout, second_poisons);
    if (again.judge_failed) {
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
    second = outputs_of(layout, 0);
  }
  check_answers(ins, layout, first, poisons, twice ? &second : nullptr, second_poisons, &r);
  // A timed window whose answers are right must also have taken at least the switches.
  if (r.decision.verdict == Verdict::kPassed && timed && window_) {
    r.decision = window_check(raw.clock, calib_);
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
  RawWindow again = send_window(c, ins, layout, poisons);
  if (again.judge_failed) return {Verdict::kNotRun, fatal_};
  again.facts.judge_call_ms = raw->facts.judge_call_ms;
  again.facts.switch_us = raw->facts.switch_us;
  const Decision second = decide_verdict(again.facts);
  if (second.verdict == Verdict::kTimingEscape) {
    return {first.verdict, first.reason + "; made again on the same inputs, it stayed busy for " +
                               fmt(again.facts.busy_after_us, 0) + " us"};
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

std::vector<std::vector<uint8_t>> Session::outputs_of(const Layout& layout, int set) const {
  std::vector<std::vector<uint8_t>> out;
  const uint8_t* image = set_image(set);
  for (const Slot& sl : layout.slots) {
    if (sl.param->role == "in") continue;
    const uint8_t* p = image + sl.offset + kCanaryBytes;
    out.emplace_back(p, p + sl.payload);
  }
  return out;
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
  // The sets are checked on several threads where the oracle runs on the CPU (a GPU oracle
  // runs on the judge's one stream, one set at a time); the first failing set is reported.
  const int n = int(ins.size());
  const int threads = gpu_oracle(ins.front().dims)
                          ? 1
                          : std::max(1, std::min<int>(n, int(std::thread::hardware_concurrency())));
  std::vector<SetCheck> checks(static_cast<size_t>(n));
  std::vector<std::string> errs(static_cast<size_t>(n));
  std::vector<char> ok(static_cast<size_t>(n), 0);
  auto work = [&](int t) {
    for (int s = t; s < n; s += threads) {
      // The outputs as solve() wrote them (the first window's where it was made twice).
      const std::vector<std::vector<uint8_t>> got = first.empty() ? outputs_of(layout, s) : first;
      ok[size_t(s)] = check_set(ins[size_t(s)], got, poisons, second, second_poisons,
                                &checks[size_t(s)], &errs[size_t(s)]);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (std::thread& th : pool) th.join();
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
  report_benchmark(c, timing, run, w, last, passed, v, failed_seed);
  if (passed && (opts_.action == Action::kSubmit || opts_.action == Action::kSweep) &&
      opts_.yardstick) {
    time_yardstick(ins, timing, workload, &j);
  } else if (!passed && opts_.action == Action::kSweep && opts_.yardstick && !ins.empty()) {
    // A sweep shows the yardstick on every shape it can, the solution's failures too.
    time_yardstick(ins, timing, workload, &j);
  }
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

void Session::report_benchmark(const CaseSpec& c, const TimingSpec& timing, const SampleRun& run,
                               const WindowSamples& w, const WindowResult& last, bool passed,
                               Verdict v, uint64_t failed_seed) {
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
  if (limit() > 0) {
    log_ << "  (" << fmt(100 * value / limit(), 1) << "% of " << limit_name(spec_.limit) << ")";
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

bool Session::load_challenge(JudgeOutcome* outcome) {
  std::string err;
  outcome->code = ExitCode::kUsage;
  if (!load_spec(opts_.challenge_dir, &spec_, &err)) {
    log_ << "fp4arena: " << err << "\n";
    return false;
  }
  challenge_ = make_challenge(spec_.name);
  if (!challenge_) {
    log_ << "fp4arena: " << spec_.path << ": field 'name': no challenge code is registered as '"
         << spec_.name << "' (registered:";
    for (const std::string& n : registered_challenges()) log_ << " " << n;
    log_ << ")\n";
    return false;
  }
  for (const auto* list : {&spec_.tests, &spec_.benchmarks}) {
    for (const CaseSpec& c : *list) {
      if (!challenge_->check_case(c, &err)) {
        log_ << "fp4arena: " << spec_.path << ": " << err << "\n";
        return false;
      }
    }
  }
  for (size_t i = 0; i < spec_.sweep.size(); ++i) {
    if (!challenge_->check_case(spec_.sweep[i], &err)) {
      log_ << "fp4arena: " << spec_.path << ": field 'sweep[" << i << "]': " << err << "\n";
      return false;
    }
  }
  if (!opts_.shapes_path.empty() && opts_.action != Action::kSweep) {
    log_ << "fp4arena: --shapes: only with --action sweep\n";
    return false;
  }
  if (opts_.action == Action::kSweep) {
    if (!opts_.shapes_path.empty()) {
      if (!load_shapes_file(opts_.shapes_path, spec_, &sweep_shapes_, &err)) {
        log_ << "fp4arena: --shapes: " << err << "\n";
        return false;
      }
      for (size_t i = 0; i < sweep_shapes_.size(); ++i) {
        if (!challenge_->check_case(sweep_shapes_[i], &err)) {
          log_ << "fp4arena: --shapes: " << opts_.shapes_path << ": field '[" << i << "]': " << err
               << "\n";
          return false;
        }
      }
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
        log_ << "fp4arena: --case: no shape named '" << name << "' in " << sweep_source_ << "\n";
        return false;
      }
    }
  } else {
    if (!add_random_tests()) return false;
    for (const std::string& name : opts_.cases) {
      if (!spec_.find_case(name)) {
        log_ << "fp4arena: --case: no case named '" << name << "' in " << spec_.path
             << (spec_.random_tests.empty()
                     ? ""
                     : " (a random test is named like " + spec_.random_tests[0].name + "_0a1b2c3d)")
             << "\n";
        return false;
      }
    }
  }
  if (opts_.has_seed && opts_.cases.empty()) {
    log_ << "fp4arena: --seed: give the case to replay with --case NAME\n";
    return false;
  }
  return true;
}

// The random_tests recipes' cases join the tests: under run and submit with no --case, each
// recipe's count drawn afresh (shapes no solution can know in advance); a --case naming one
// ("random_0a1b2c3d") replays it under any action. Each is checked as a spec case is, and
// the drawn ones are printed with the option that replays them.
bool Session::add_random_tests() {
  std::vector<CaseSpec> added;
  for (const std::string& name : opts_.cases) {
    CaseSpec c;
    if (!spec_.find_case(name) && random_case_named(spec_, name, &c)) added.push_back(c);
  }
  const bool draw =
      opts_.cases.empty() && (opts_.action == Action::kRun || opts_.action == Action::kSubmit);
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
      log_ << "fp4arena: " << spec_.path << ": field 'random_tests': the case " << c.name << " ("
           << shape_text(spec_, c.dims) << ") it draws is not valid: " << err << "\n";
      return false;
    }
    spec_.tests.push_back(c);
  }
  if (draw && !added.empty()) {
    std::ostringstream os;
    os << "  drawn for this run (replay one with --case NAME):";
    for (const CaseSpec& c : added) os << " " << c.name << " " << shape_text(spec_, c.dims);
    random_note_ = os.str() + "\n";
  }
  return true;
}

bool Session::open_device(JudgeOutcome* outcome) {
  std::string err;
  gpu_ = opts_.action != Action::kCheck && cuda_device_count(&no_gpu_reason_) > 0;
  if (!gpu_) return true;
  if (!query_device(opts_.device, &device_, &err)) {
    log_ << "fp4arena: --device " << opts_.device << ": " << err << "\n";
    outcome->code = ExitCode::kUsage;
    return false;
  }
  device_.arch = arch_for_compute_capability(device_.cc_major, device_.cc_minor);
  // The judge's own GPU work (oracle, yardstick) runs on the judged device too.
  cudaError_t e = cudaSetDevice(opts_.device);
  if (e != cudaSuccess) {
    log_ << "fp4arena: --device " << opts_.device << ": " << cudaGetErrorString(e) << "\n";
    outcome->code = ExitCode::kUsage;
    return false;
  }
  return true;
}

bool Session::compile_step(JudgeOutcome* outcome) {
  std::string err;
  CompileOptions copts;
  copts.arch = !opts_.arch.empty() ? opts_.arch : gpu_ ? device_.arch : "sm_90a";
  copts.cache_dir = opts_.cache_dir;
  copts.include_dirs = opts_.include_dirs;
  copts.extra_flags = opts_.nvcc_flags;
  device_.arch = copts.arch;
  std::string nvcc = find_nvcc();
  nvcc_version_ = nvcc.empty() ? "" : nvcc_version(nvcc);

  log_ << "fp4arena " << FP4ARENA_VERSION << " | " << spec_.name << " (spec v" << spec_.spec_version
       << ") | " << opts_.solution_path << "\n";
  progress("compile  ...");
  if (!compile_solution(spec_, opts_.solution_path, copts, &compiled_, &err)) {
    end_progress();
    log_ << "fp4arena: " << err << "\n";
    outcome->code = compiled_.usage_error || err.rfind("--arch", 0) == 0 ? ExitCode::kUsage
                                                                         : ExitCode::kInternal;
    return false;
  }
  end_progress();
  if (!compiled_.ok) {
    log_ << "compile  FAILED for " << copts.arch << " (nvcc " << nvcc_version_ << ")\n"
         << compiled_.diagnostics;
    if (!compiled_.diagnostics.empty() && compiled_.diagnostics.back() != '\n') log_ << "\n";
    outcome->code = ExitCode::kCompileError;
    return false;
  }
  log_ << "compile  ok"
       << (compiled_.cached ? " (cached)" : " in " + fmt(compiled_.seconds, 1) + " s") << "  "
       << copts.arch << "  nvcc " << nvcc_version_ << "  sha256 "
       << compiled_.source_sha256.substr(0, 12) << "\n";
  if (!compiled_.diagnostics.empty()) log_ << compiled_.diagnostics;
  if (!compiled_.kernels.empty()) log_ << format_kernel_resources(compiled_.kernels);
  for (const HeaderHash& h : compiled_.headers) {
    log_ << "header   " << h.path << "  sha256 " << h.sha256.substr(0, 12) << "\n";
  }
  return true;
}

void Session::print_device() {
  log_ << "device   " << device_.name << " | " << device_.sm_count << " SMs | "
       << device_.sm_clock_max_mhz << " MHz max";
  if (device_.sm_clock_now_mhz >= 0) log_ << " (" << device_.sm_clock_now_mhz << " now)";
  log_ << " | driver " << (device_.driver_version.empty() ? "?" : device_.driver_version)
       << " | CUDA " << device_.cuda_driver;
  if (limit() > 0) {
    log_ << " | " << limit_name(spec_.limit) << " limit " << fmt(limit(), 0) << " "
         << spec_.metric.unit();
  } else {
    log_ << " | no " << limit_name(spec_.limit) << " limit known for this device";
  }
  log_ << "\n";
}

nlohmann::json Session::record_json(const std::vector<nlohmann::json>& tests,
                                    const std::vector<nlohmann::json>& benches, const Score& score,
                                    bool all_passed) const {
  nlohmann::json headers = nlohmann::json::array();
  for (const HeaderHash& h : compiled_.headers) {
    headers.push_back({{"path", h.path}, {"sha256", h.sha256}});
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
        {"sha256", compiled_.source_sha256},
        {"author", opts_.author.empty() ? author_of(source_) : opts_.author},
        {"headers", headers},
        {"nvcc_flags", compiled_.nvcc_flags},
        {"include_dirs", compiled_.include_dirs},
        {"kernels", kernel_resources_json(compiled_.kernels)}}},
      {"device", device_to_json(device_, nvcc_version_)},
      {"buffers", buffer_mode_name(opts_.buffers)},
      {"sandbox", sandbox_},
      {"timing_method", kTimingMethod},
      {"timing",
       "each sample is one window of back-to-back calls, each on fresh inputs not in the L2 "
       "(a clean flush before the window), timed by the judge's own events in its own context: "
       "its events around the calls, less the two context switches it calibrated before the "
       "solution was loaded, over the calls; the worker's own times are diagnostics; the "
       "yardstick is timed in the judge's process by the same warm-up, flush and "
       "back-to-back rule"},
      {"tests", tests},
      {"benchmarks", benches},
      {"score",
       {{"geomean", score.geomean ? nlohmann::json(*score.geomean) : nlohmann::json(nullptr)},
        {"valid", score.valid},
        {"reason", score.reason}}},
      {"passed", all_passed},
      {"escape_rechecks", escape_rechecks_},
      {"wall_seconds", seconds_since(t_start_)}};
  if (!opts_.cases.empty()) record["only_cases"] = opts_.cases;
  if (opts_.has_seed) record["replayed_seed"] = opts_.seed;
  return record;
}

ExitCode Session::finish(const std::vector<nlohmann::json>& tests,
                         const std::vector<nlohmann::json>& benches, JudgeOutcome* outcome) {
  int passed = 0, total = 0;
  bool runtime_failure = false;
  std::vector<double> values;
  for (const auto* list : {&tests, &benches}) {
    for (const nlohmann::json& r : *list) {
      Verdict v = Verdict::kNotRun;
      parse_verdict(r["verdict"].get<std::string>(), &v);
      ++total;
      passed += v == Verdict::kPassed;
      runtime_failure |= is_runtime_failure(v);
    }
  }
  for (const nlohmann::json& b : benches) {
    if (b["value"].is_number()) values.push_back(b["value"].get<double>());
  }
  Score score =
      compute_score(values, total, passed, limit(), limit_name(spec_.limit), spec_.metric.unit());
  const bool all_passed = passed == total && total > 0 && score.valid;

  outcome->record = record_json(tests, benches, score, all_passed);

  log_ << "score    ";
  if (score.geomean) {
    log_ << "geomean " << fmt(*score.geomean, 1) << " " << spec_.metric.unit();
    if (!score.valid) log_ << "  INVALID: " << score.reason;
  } else {
    log_ << "none (" << score.reason << ")";
  }
  log_ << "\nresult   " << (all_passed ? "PASSED" : "FAILED") << "  " << passed << "/" << total
       << " cases passed in " << fmt(seconds_since(t_start_), 1) << " s\n";

  if (!fatal_.empty()) return fail_internal(fatal_);
  if (runtime_failure) return ExitCode::kRuntimeError;
  return all_passed ? ExitCode::kPassed : ExitCode::kFailed;
}

bool Session::write_record(JudgeOutcome* outcome) {
  std::string err;
  std::string path = opts_.output_path;
  if (path.empty()) {
    std::string dir = opts_.results_dir + "/" + spec_.name + "/" + slug(device_.name);
    if (!make_dirs(dir, &err)) {
      outcome->code = fail_internal(err);
      return false;
    }
    path = dir + "/" + stem_of(opts_.solution_path) + "-" + compiled_.source_sha256.substr(0, 12) +
           ".json";
  }
  if (!write_file_atomic(path, outcome->record.dump(2) + "\n", &err)) {
    outcome->code = fail_internal(err);
    return false;
  }
  outcome->record_path = path;
  log_ << "record   " << path << "\n";
  return true;
}

ExitCode Session::run_dump() {
  std::string err;
  if (opts_.cases.size() != 1) {
    log_ << "fp4arena: --action dump: give exactly one --case NAME\n";
    return ExitCode::kUsage;
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
    log_ << "fp4arena: --action dump: " << err << "\n";
    return ExitCode::kUsage;
  }
  log_ << "dump     " << spec_.name << " case " << c.name << " (" << shape_text(spec_, c.dims)
       << ", seed " << seed << ") -> " << dir << "/\n";
  for (const std::string& f : files) log_ << "  " << f << "\n";
  log_ << "load with: python3 " << dir << "/load.py\n";
  return ExitCode::kPassed;
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
    log_ << "fp4arena: --solution: " << err << "\n";
    outcome.code = ExitCode::kUsage;
    return outcome;
  }
  if (!check_output_paths(&outcome)) return outcome;
  // Device first: it decides the architecture the solution is compiled for.
  if (!open_device(&outcome)) return outcome;
  if (!compile_step(&outcome)) return outcome;
  if (opts_.action == Action::kCheck) {
    log_ << "check    ok: compiles and " << spec_.function << "() matches the signature\n";
    outcome.code = ExitCode::kPassed;
    return outcome;
  }
  if (!gpu_) {
    log_ << "no CUDA GPU available (" << no_gpu_reason_
         << "): the solution compiled and its signature matches, but nothing was run.\n";
    outcome.code = ExitCode::kNoGpu;
    return outcome;
  }
  print_device();
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
    log_ << "fp4arena: --output: " << err << "\n";
    outcome->code = ExitCode::kUsage;
    return false;
  }
  if (opts_.action == Action::kSweep && !check_sweep_dir(sweep_dir(), &err)) {
    log_ << "fp4arena: --out: " << err << "\n";
    outcome->code = ExitCode::kUsage;
    return false;
  }
  return true;
}

// The worker's shared memory: the largest layout of the cases this action runs.
void Session::size_shared_memory() {
  for (const auto* list : {&spec_.tests, &spec_.benchmarks, &sweep_shapes_}) {
    if (list == &sweep_shapes_ && opts_.action != Action::kSweep) continue;
    if (list != &sweep_shapes_ && opts_.action == Action::kSweep) continue;
    for (const CaseSpec& c : *list) {
      if (selected(c)) shm_bytes_ = std::max(shm_bytes_, layout_for(spec_, c.dims).total);
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
  worker_.reset();
  reap_orphans();
  for (const std::string& f : tool_logs_) log_ << "tool log " << f << "\n";
  record["tool_logs"] = tool_logs_;
  outcome->record = record;
  return code;
}

// run and submit: the selected tests, then the selected benchmarks, then the record.
void Session::run_cases(JudgeOutcome* outcome) {
  // The judge's memory (expected outputs) must not be readable by the worker through
  // /proc/<pid>/mem or ptrace, even under the same user.
  prctl(PR_SET_DUMPABLE, 0);

  std::vector<nlohmann::json> tests, benches;
  auto sel = [this](const CaseSpec& c) { return selected(c); };
  if (std::any_of(spec_.tests.begin(), spec_.tests.end(), sel)) log_ << "tests\n" << random_note_;
  for (const CaseSpec& c : spec_.tests) {
    if (!selected(c)) continue;
    tests.push_back(fatal_.empty() ? run_test(c)
                                   : nlohmann::json{{"name", c.name},
                                                    {"seed", case_seed(c)},
                                                    {"dims", c.dims},
                                                    {"verdict", "not_run"},
                                                    {"reason", fatal_},
                                                    {"outputs", nlohmann::json::array()},
                                                    {"wall_ms", 0}});
  }
  if (std::any_of(spec_.benchmarks.begin(), spec_.benchmarks.end(), sel)) log_ << "benchmarks\n";
  for (const CaseSpec& c : spec_.benchmarks) {
    if (!selected(c)) continue;
    if (fatal_.empty()) {
      benches.push_back(run_benchmark(c));
    } else {
      benches.push_back({{"name", c.name},
                         {"seed", case_seed(c)},
                         {"dims", c.dims},
                         {"workload", case_workload(spec_, c.dims)},
                         {"verdict", "not_run"},
                         {"reason", fatal_},
                         {"value", nullptr},
                         {"yardstick", nullptr}});
    }
  }
  worker_.reset();
  reap_orphans();
  outcome->code = finish(tests, benches, outcome);
  outcome->sample_seeds = sample_seeds_;
  if (opts_.action == Action::kSubmit) write_record(outcome);
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

SweepShape Session::sweep_shape(const CaseSpec& c, const nlohmann::json& j) {
  SweepShape s;
  s.name = c.name;
  s.label = shape_text(spec_, c.dims);
  for (const DimSpec& d : spec_.dims) s.dims.emplace_back(d.name, c.dims.at(d.name));
  s.workload = case_workload(spec_, c.dims);
  s.verdict = j.value("verdict", "not_run");
  s.reason = j.value("reason", "");
  s.samples = j.value("samples", 0);
  if (s.verdict == "passed" && j["median_ms"].is_number() && j["value"].is_number()) {
    s.median_ms = j["median_ms"].get<double>();
    s.value = j["value"].get<double>();
    if (limit() > 0 && *s.value > limit()) {
      s.over_limit = true;
      s.reason = "over_limit: " + fmt(*s.value, 1) + " " + spec_.metric.unit() +
                 " exceeds the device's " + limit_name(spec_.limit) + " limit of " +
                 fmt(limit(), 1) + " " + spec_.metric.unit();
      log_ << "        " << s.reason << "\n";
    }
  }
  const nlohmann::json& y = j["yardstick"];
  if (y.is_object() && y.contains("median_ms") && y["median_ms"].is_number() &&
      y.contains("value") && y["value"].is_number()) {
    s.yardstick = SweepYardstickResult{y.value("name", ""), y["median_ms"].get<double>(),
                                       y["value"].get<double>()};
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
       << rep.shapes.size() << " shapes passed in " << fmt(rep.wall_seconds, 1) << " s\n"
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
      std::to_string(timing.max_samples) + " samples within " + fmt(timing.max_seconds, 0) +
      " s, fresh inputs and every output checked on every call; the yardstick" +
      (opts_.yardstick ? " timed the same way" : " not timed (--no-yardstick)");
  log_ << "sweep    " << shapes.size() << (shapes.size() == 1 ? " shape" : " shapes") << " from "
       << sweep_source_ << "; " << timing_text << "\n";
  SweepReport rep = sweep_report(timing_text);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const CaseSpec& c = *shapes[i];
    progress_tag_ = "[" + std::to_string(i + 1) + "/" + std::to_string(shapes.size()) + "] ";
    nlohmann::json j;
    if (fatal_.empty()) {
      j = run_benchmark(c);
    } else {
      j = {{"verdict", "not_run"}, {"reason", fatal_}, {"yardstick", nullptr}};
      log_ << "  SKIP  " << c.name << "  " << shape_text(spec_, c.dims) << ": " << fatal_ << "\n";
    }
    rep.shapes.push_back(sweep_shape(c, j));
  }
  progress_tag_.clear();
  worker_.reset();
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
  // Sanitized code runs 10-100x slower; the worker writes its report when it exits.
  timeout_scale_ = 50;
  exit_grace_seconds_ = 120;
  bool failed = false, runtime_failure = false;
  for (const char* tool : {"memcheck", "racecheck"}) {
    wrapper_ = {cs, "--tool", tool, "--log-file", "{LOG}", "--print-limit", "20"};
    size_t first_log = tool_logs_.size();
    log_ << "sanitize " << tool << " (" << cs << ")\n";
    nlohmann::json tests = nlohmann::json::array();
    for (const CaseSpec& c : spec_.tests) {
      if (!selected(c) || !fatal_.empty()) continue;
      nlohmann::json r = run_test(c);
      Verdict v = Verdict::kNotRun;
      parse_verdict(r["verdict"].get<std::string>(), &v);
      failed |= v != Verdict::kPassed;
      runtime_failure |= is_runtime_failure(v);
      tests.push_back(r);
    }
    worker_.reset();  // the tool prints its summary when the worker exits
    SanitizerSummary sum = parse_sanitizer_log(read_logs(tool_logs_, first_log));
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
  auto num = [](double v, int prec) { return v < 0 ? std::string("n/a") : fmt(v, prec); };
  log << "  " << std::left << std::setw(44) << "kernel" << std::right << std::setw(12)
      << "time (us)" << std::setw(8) << "SM %" << std::setw(10) << "tensor %" << std::setw(9)
      << "DRAM %" << std::setw(16) << "smem conflicts"
      << "  busiest pipe  top stalls (cycles per instruction)"
      << "\n";
  nlohmann::json ks = nlohmann::json::array();
  double total_us = 0;
  for (const KernelProfile& k : kernels) {
    std::string name = k.name.size() > 42 ? k.name.substr(0, 39) + "..." : k.name;
    log << "  " << std::left << std::setw(44) << name << std::right << std::setw(12)
        << num(k.duration_us, 1) << std::setw(8) << num(k.sm_pct, 1) << std::setw(10)
        << num(k.tensor_pct, 1) << std::setw(9) << num(k.dram_pct, 1) << std::setw(16)
        << num(k.bank_conflicts, 0) << "  " << std::left << std::setw(12)
        << (k.busiest_pipe.empty() ? std::string("n/a")
                                   : k.busiest_pipe + " " + num(k.busiest_pipe_pct, 1) + "%")
        << std::right;
    std::string stalls;
    nlohmann::json js = nlohmann::json::array();
    for (const auto& [reason, cycles] : k.top_stalls) {
      stalls += (stalls.empty() ? "" : ", ") + reason + " " + fmt(cycles, 1);
      js.push_back({{"reason", reason}, {"cycles_per_instruction", cycles}});
    }
    log << "  " << (stalls.empty() ? std::string("n/a") : stalls) << "\n";
    total_us += std::max(0.0, k.duration_us);
    ks.push_back({{"name", k.name},
                  {"duration_us", k.duration_us},
                  {"sm_throughput_pct", k.sm_pct},
                  {"tensor_pipe_pct", k.tensor_pct},
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
  wrapper_ = ncu_argv(ncu);
  timeout_scale_ = 60;  // ncu replays each kernel once per metric pass
  exit_grace_seconds_ = 300;
  shm_bytes_ = layout_for(spec_, c->dims).total;
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
  worker_.reset();  // ncu writes its report when the worker exits
  log_ << "  the profiled call's output: " << verdict_name(v.decision.verdict)
       << (v.decision.reason.empty() ? "" : ": " + v.decision.reason) << "\n";
  std::vector<KernelProfile> kernels;
  std::string text = read_logs(tool_logs_, 0);
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
    log_ << "  all kernels: " << fmt(total_us, 1)
         << " us = " << fmt(spec_.metric.value(workload, total_us / 1000.0), 1) << " "
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

}  // namespace

JudgeOutcome judge(const JudgeOptions& opts, std::ostream& log) {
  // Not dumpable: a worker of the judge's own user (where the judge is not root) cannot read
  // its memory, environment or stack through /proc, nor trace it.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  Session s(opts, log);
  return s.run();
}

}  // namespace fp4arena
