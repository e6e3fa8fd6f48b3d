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

#include "harness/call_window.h"
#include "harness/challenge.h"
#include "harness/device_info.h"
#include "harness/dump.h"
#include "harness/ipc.h"
#include "harness/pre_call.h"
#include "harness/process.h"
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
constexpr const char* kRecordSchema = "fp4arena.submit.v2";
// Empty timed round trips the judge makes to learn its own clock's overhead.
constexpr int kCalibrationCalls = 21;

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

// The result of one call, judged.
struct CallResult {
  Decision decision;
  std::vector<OutputReport> outputs;
  double event_ms = 0;  // work after the stop event included
  double wall_ms = 0;   // the judge's clock around the timed round trip
  WindowClock window;   // the judge's window on the GPU timeline (harness/verdict.h)
  double delivery_model_ms = 0, snapshot_model_ms = 0;  // its copies, by the device model
  double empty_wall_ms = 0;
  double worker_go_ms = 0;
  double host_call_ms = 0;
  bool hold_timed_out = false;
  double busy_after_us = 0;
  double copy_allowance_ms = 0;
};

// What the worker's reply and the returned buffers say, before the answer is checked.
struct RawCall {
  CallFacts facts;
  double event_ms = 0, host_call_ms = 0, busy_after_us = 0;
  double wall_ms = 0;        // the judge's own clock around the timed round trip
  double empty_wall_ms = 0;  // ... around an empty timed round trip just before it
  WindowClock window;        // the judge's window on the GPU timeline (harness/verdict.h)
  double delivery_model_ms = 0, snapshot_model_ms = 0;  // its copies, by the device model
  double worker_go_ms = 0;  // the worker's own clock around go (reported, diagnostic)
  bool hold_timed_out = false;
  double copy_allowance_ms = 0;    // what the window's copies may add (CallWindow)
  const uint8_t* image = nullptr;  // every buffer after the call, at its layout offset
  bool judge_failed = false;       // the judge's own CUDA work failed (fatal_ says how)
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

void print_failure(std::ostream& log, const CallResult& r) {
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

class Session {
 public:
  Session(const JudgeOptions& opts, std::ostream& log) : opts_(opts), log_(log) {}

  JudgeOutcome run();

 private:
  // Steps of run(), in order; each returns false with outcome->code set when the run ends.
  bool load_challenge(JudgeOutcome* outcome);
  bool open_device(JudgeOutcome* outcome);
  bool compile_step(JudgeOutcome* outcome);
  void print_device();
  ExitCode finish(const std::vector<nlohmann::json>& tests,
                  const std::vector<nlohmann::json>& benches, JudgeOutcome* outcome);
  bool write_record(JudgeOutcome* outcome);

  // Calls.
  // Starts a worker, calibrates the judge's clock on it (before user code is loaded) and
  // loads the solution. False on failure: *load_failed with *load_facts set when the
  // solution itself failed to load (its constructors crashed, exited or hung); otherwise
  // *err says why the worker could not start (the judge's failure).
  bool start_worker(std::string* err, bool* load_failed = nullptr, CallFacts* load_facts = nullptr);
  // A failed start as the verdict of the case that needed the worker.
  bool start_or_fail(CallResult* r);
  RawCall send_call(const CaseSpec& c, const ProblemData& in, bool timed, const Layout& layout,
                    const std::vector<Poison>& poisons);
  // *dev: the window's GPU times (harness/verdict.h), zero without a window.
  CallReply windowed_call(const nlohmann::json& request, double timeout, double* ms,
                          WindowClock* dev);
  // The worker's sync buffer named in a prepare reply, mapped (false + *err: the worker's
  // fault).
  bool map_sync(const CallReply& reply, std::string* err);
  // The worker's prepare request: buffers and arguments, flush for a timed call, ring slot
  // (-1: fresh buffers), and whether the judge's window handles the buffers.
  nlohmann::json prepare_request(const nlohmann::json& buffers, const nlohmann::json& args,
                                 bool timed, int slot) const;
  // A CUDA failure of the judge's own work: the run cannot go on (fatal_).
  void set_judge_cuda_failure(const char* step, cudaError_t e);
  // The judge's pre-call work (L2 flush) in its own context: the yardstick's, and the
  // flush inside every call window. Null with *err set when it cannot be made.
  PreCall* judge_pre_call(std::string* err);
  CallResult call_once(const CaseSpec& c, const ProblemData& in, bool timed);
  // The oracle's answer for every output; given what solve() wrote (`written`, by output
  // name), the challenge's answer for the choices it made (Challenge::condition). Every
  // output then has an answer of the right size for its comparison.
  bool compute_expected(const ProblemData& in, Expected* out, std::string* err,
                        const std::map<std::string, std::vector<uint8_t>>* written = nullptr);

  // Cases.
  nlohmann::json run_test(const CaseSpec& c);
  nlohmann::json run_benchmark(const CaseSpec& c);
  void time_yardstick(const ProblemData& in, const TimingSpec& timing, double workload,
                      nlohmann::json* j);
  ExitCode run_sanitize(nlohmann::json* record);
  ExitCode run_profile(nlohmann::json* record);
  ExitCode run_dump();
  // --action sweep: every shape of sweep_shapes_ timed like a --action run benchmark, the
  // yardstick beside it, then sweep.json, sweep.html and sweep.svg.
  ExitCode run_sweep(JudgeOutcome* outcome);
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
  uint64_t calls_made_ = 0;
  double overhead_ms_ = 0;  // median judge-clock time of an empty timed round trip
  // Medians over the same calls of an empty window's parts on the GPU timeline.
  WindowClock empty_window_;
  uint32_t window_seq_ = 0;  // the last window's sequence number (its go/done words)
  std::string sandbox_;      // what the worker's sandbox enforced
  // --action sweep: the shapes and where they came from.
  std::vector<CaseSpec> sweep_shapes_;
  std::string sweep_source_;
  std::string progress_tag_;  // put before every progress line ("[3/11] ")
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
  std::vector<double> pre, device, post;
  for (const WindowClock& c : w) {
    pre.push_back(c.pre_ms);
    device.push_back(c.device_ms);
    post.push_back(c.post_ms);
  }
  return {summarize(pre).median_ms, summarize(device).median_ms, summarize(post).median_ms};
}
nlohmann::json window_json(const WindowClock& c) {
  return {{"delivery", c.pre_ms}, {"call", c.device_ms}, {"snapshot", c.post_ms}};
}

bool Session::start_worker(std::string* err, bool* load_failed, CallFacts* load_facts) {
  if (load_failed) *load_failed = false;
  WorkerOptions w;
  w.worker_path =
      opts_.worker_path.empty() ? self_exe_dir() + "/fp4arena_worker" : opts_.worker_path;
  w.so_path = compiled_.so_path;
  w.device = opts_.device;
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
    PreCall* flush = judge_pre_call(err);
    if (!flush) return false;
    auto cw = std::make_unique<CallWindow>();
    if (!cw->init(flush, err)) return false;
    window_ = std::move(cw);
  }
  if (window_) window_->unmap_all();
  worker_ = WorkerProcess::start(w, err);
  if (!worker_) return false;
  // The overhead of the judge's own clock: empty timed round trips in the judge's window
  // (with no buffers to copy), before any user code is in the worker's address space, each
  // after the pre-call traffic and L2 flush of a prepare with no buffers, as the empty round
  // trip beside every timed call is.
  const double timeout = timeout_scale_ * spec_.call_timeout_seconds;
  std::vector<double> wall;
  std::vector<WindowClock> windows;
  // Under compute-sanitizer or ncu timing means nothing (and every blocking kernel would be
  // instrumented): no calibration.
  const int calibration_calls = wrapper_.empty() ? kCalibrationCalls : 0;
  for (int i = 0; i < calibration_calls; ++i) {
    CallReply r = worker_->call(
        prepare_request(nlohmann::json::array(), nlohmann::json::array(), true, -1), timeout);
    std::string why;
    if (r.outcome == CallOutcome::kOk && (!window_->map({}, {}, &why) || !map_sync(r, &why))) {
      r.outcome = CallOutcome::kWorkerError;
      r.detail = why;
    }
    double ms = 0;
    WindowClock dev;
    if (r.outcome == CallOutcome::kOk) r = windowed_call({{"op", "empty"}}, timeout, &ms, &dev);
    wall.push_back(ms);
    windows.push_back(dev);
    if (r.outcome != CallOutcome::kOk) {
      *err = "worker failed while the judge calibrated its clock: " + r.detail;
      worker_.reset();
      return false;
    }
  }
  overhead_ms_ = summarize(wall).median_ms;
  empty_window_ = median_window(windows);
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

bool Session::start_or_fail(CallResult* r) {
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

bool Session::compute_expected(const ProblemData& in, Expected* out, std::string* err,
                               const std::map<std::string, std::vector<uint8_t>>* written) {
  const bool gpu = gpu_ && case_workload(spec_, in.dims) >= kGpuOracleWorkload;
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

nlohmann::json Session::prepare_request(const nlohmann::json& buffers, const nlohmann::json& args,
                                        bool timed, int slot) const {
  // With the judge's window the worker only allocates and exports; under a tool it fills
  // the buffers from shared memory.
  return {{"op", "prepare"}, {"buffers", buffers}, {"args", args},           {"flush_l2", timed},
          {"slot", slot},    {"fill", !window_},   {"export", bool(window_)}};
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

// How long a window may still wait for the worker's done word after the worker answered.
constexpr auto kDoneGrace = std::chrono::seconds(1);

// One round trip inside the judge's window (harness/call_window.h): the whole window is
// enqueued on the judge's stream first (inputs delivered, L2 flushed, the go word, a wait for
// the worker's done word, every output copied to judge-only memory), then the worker is told
// to go; the judge's clock (*ms) runs until the window's work is done, and its device events
// give the window's GPU times (*dev). Without a window (under a tool) the round trip alone.
CallReply Session::windowed_call(const nlohmann::json& request, double timeout, double* ms,
                                 WindowClock* dev) {
  const auto t0 = Clock::now();
  const auto limit =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout));
  *dev = WindowClock{};
  CallReply r;
  auto judge_failed = [&](const char* step, cudaError_t e) {
    set_judge_cuda_failure(step, e);
    r.outcome = CallOutcome::kWorkerError;
    r.detail = fatal_;
    *ms = seconds_since(t0) * 1000.0;
    return r;
  };
  if (!window_) {
    r = worker_->call(request, timeout);
    *ms = seconds_since(t0) * 1000.0;
    return r;
  }
  const uint32_t seq = ++window_seq_;
  cudaError_t e = window_->open(seq);
  if (e != cudaSuccess) {
    window_->release(seq);
    return judge_failed("call window", e);
  }
  nlohmann::json go = request;
  go["seq"] = seq;
  r = worker_->call(go, timeout);
  // A worker that failed, or answered without writing its done word, leaves the window
  // waiting: the judge writes the word itself (a call that failed is not timed anyway, and
  // an answer without it is either a forged one, whose outputs the snapshot then takes as
  // they are, or it waits out the call's time limit below).
  if (r.outcome != CallOutcome::kOk) window_->release(seq);
  // An honest worker writes its done word before it answers, so after an answer the window
  // ends at once. One that answered without it (a solution speaking for the worker) gets a
  // grace period, then the judge ends the window itself: whatever the call had not finished
  // by then is missing from the snapshot, and the window's device time runs until then.
  e = window_->wait(Clock::now() + (r.outcome == CallOutcome::kOk ? kDoneGrace : limit));
  if (e == cudaErrorNotReady && r.outcome == CallOutcome::kOk) {
    window_->release(seq);
    e = window_->wait(Clock::now() + limit);
  }
  if (e == cudaErrorNotReady) {
    // The done word never came, or the worker kept the GPU so busy for the whole call
    // timeout that the judge's copies never ran: it is killed (its work goes with it) and
    // the call has timed out.
    worker_->kill_all();
    window_->release(seq);
    r.outcome = CallOutcome::kTimeout;
    r.detail = "no answer within " + std::to_string(timeout) +
               " s: its work kept the GPU from the judge's window (killed)";
    e = window_->wait(Clock::now() + std::chrono::seconds(10));
  }
  if (e != cudaSuccess) return judge_failed("call window", e);
  *dev = window_->clock();
  *ms = seconds_since(t0) * 1000.0;
  return r;
}

// Sends one call and gathers what the reply and the buffers show about its integrity. With
// the judge's window (the normal case) the worker only allocates the buffers: the judge
// writes canaries and poison into them, delivers the inputs inside the timed window and
// reads everything back itself. Under a tool the buffers travel through shared memory.
RawCall Session::send_call(const CaseSpec& c, const ProblemData& in, bool timed,
                           const Layout& layout, const std::vector<Poison>& poisons) {
  RawCall raw;
  uint8_t* shm = worker_->shm();
  // A fresh canary for every call, from the kernel's random source: it carries nothing a
  // solution could use to predict seeds or later canaries.
  std::vector<uint8_t> canary(kCanaryBytes);
  random_bytes(canary.data(), canary.size());
  nlohmann::json buffers = nlohmann::json::array();
  std::map<std::string, int> buffer_index;
  std::vector<WindowBuffer> window_buffers;
  std::vector<const uint8_t*> inputs;
  std::vector<size_t> offsets;
  size_t out_i = 0;
  for (const Slot& s : layout.slots) {
    WindowBuffer wb;
    wb.payload = s.payload;
    wb.canary = kCanaryBytes;
    wb.output = s.param->role != "in";
    if (wb.output) {
      wb.poison = dtype_has_nan_poison(s.param->dtype) ? 0xFF : poisons[out_i].byte;
      ++out_i;
    } else {
      inputs.push_back(in.buffers.at(s.param->name).data());
    }
    if (!window_) {
      uint8_t* base = shm + s.offset;
      std::memcpy(base, canary.data(), kCanaryBytes);
      std::memcpy(base + kCanaryBytes + s.payload, canary.data(), kCanaryBytes);
      if (wb.output) {
        std::memset(base + kCanaryBytes, wb.poison, s.payload);
      } else {
        std::memcpy(base + kCanaryBytes, inputs.back(), s.payload);
      }
    }
    window_buffers.push_back(wb);
    offsets.push_back(s.offset);
    buffer_index[s.param->name] = static_cast<int>(buffers.size());
    buffers.push_back({{"offset", s.offset}, {"size", s.payload}, {"canary", kCanaryBytes}});
  }
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
  const int slot =
      opts_.buffers == BufferMode::kFresh ? -1 : int(calls_made_++ % uint64_t(kRingDepth));
  nlohmann::json req = prepare_request(buffers, args, timed, slot);
  req["case"] = c.name;
  const double base_timeout =
      opts_.call_timeout_seconds > 0 ? opts_.call_timeout_seconds : spec_.call_timeout_seconds;
  const double timeout = timeout_scale_ * base_timeout;
  CallFacts& f = raw.facts;
  f.under_tool = !wrapper_.empty();
  auto judge_failed = [&](const char* what, cudaError_t e) {
    set_judge_cuda_failure(what, e);
    raw.judge_failed = true;
    f.end = CallEnd::kWorkerError;
    f.end_detail = fatal_;
    return raw;
  };
  // prepare (allocation, pre-call traffic, flush; untimed), then with the window: the
  // buffers mapped and filled, an empty round trip in a window (the overhead of the
  // judge's clock, measured right here under the call's conditions), the inputs staged, and
  // go in a window. Only go runs user code.
  CallReply reply = worker_->call(req, timeout);
  if (reply.outcome == CallOutcome::kOk && window_) {
    std::vector<std::string> handles;
    auto h = reply.data.find("handles");
    std::string why = "malformed reply: no list of buffer handles";
    bool ok = h != reply.data.end() && h->is_array();
    for (size_t i = 0; ok && i < h->size(); ++i) {
      ok = (*h)[i].is_string();
      if (ok) handles.push_back((*h)[i].get<std::string>());
    }
    if (ok) ok = window_->map(handles, window_buffers, &why) && map_sync(reply, &why);
    if (!ok) {
      worker_->kill_all();
      f.end = CallEnd::kWorkerError;
      f.end_detail = why;
      return raw;
    }
    cudaError_t e = window_->fill(canary.data());
    if (e != cudaSuccess) return judge_failed("filling of the call's buffers", e);
  }
  if (reply.outcome == CallOutcome::kOk && timed) {
    WindowClock ignored;
    reply = windowed_call({{"op", "empty"}}, timeout, &raw.empty_wall_ms, &ignored);
    raw.judge_failed = !fatal_.empty();
    if (raw.judge_failed) return raw;
  }
  if (reply.outcome == CallOutcome::kOk && window_) {
    cudaError_t e = window_->stage(inputs);
    if (e != cudaSuccess) return judge_failed("staging of the inputs", e);
  }
  if (reply.outcome == CallOutcome::kOk) {
    reply = windowed_call({{"op", "go"}}, timeout, &raw.wall_ms, &raw.window);
    raw.judge_failed = !fatal_.empty();
    if (raw.judge_failed) return raw;
    if (reply.outcome == CallOutcome::kOk && !window_) {
      CallReply collected = worker_->call({{"op", "collect"}}, timeout);
      if (collected.outcome != CallOutcome::kOk) reply = collected;
    }
  }
  f.end = call_end_of(reply.outcome);
  f.end_detail = reply.detail;
  if (f.end != CallEnd::kOk) return raw;
  f.judge_wall_ms = raw.wall_ms;
  if (window_) {
    raw.copy_allowance_ms = window_->copy_allowance_ms();
    raw.delivery_model_ms = window_->delivery_model_ms();
    raw.snapshot_model_ms = window_->snapshot_model_ms();
    cudaError_t e = window_->read_back(offsets, layout.total);
    if (e != cudaSuccess) return judge_failed("read-back of the call's buffers", e);
    raw.image = window_->host_image();
  } else {
    raw.image = shm;
  }

  double threads_before = 0, threads_after = 0, event_ms = 0;
  std::string why;
  if (!reply_number(reply.data, "event_ms", &event_ms, &why) ||
      !reply_number(reply.data, "busy_after_us", &raw.busy_after_us, &why) ||
      !reply_number(reply.data, "host_call_ms", &raw.host_call_ms, &why) ||
      !reply_number(reply.data, "threads_before", &threads_before, &why) ||
      !reply_number(reply.data, "threads_after", &threads_after, &why)) {
    f.end = CallEnd::kWorkerError;
    f.end_detail = why;
    return raw;
  }
  auto go_ms = reply.data.find("worker_go_ms");
  if (go_ms != reply.data.end() && go_ms->is_number()) raw.worker_go_ms = go_ms->get<double>();
  auto held = reply.data.find("hold_timed_out");
  raw.hold_timed_out = held != reply.data.end() && held->is_boolean() && held->get<bool>();
  raw.event_ms = event_ms;
  f.threads_before = int(threads_before);
  f.threads_after = int(threads_after);
  f.busy_after_us = raw.busy_after_us;
  f.event_ms = event_ms - (raw.busy_after_us > kCountAfterUs ? raw.busy_after_us / 1000.0 : 0.0);

  for (const Slot& s : layout.slots) {
    const uint8_t* base = raw.image + s.offset;
    bool front = std::memcmp(base, canary.data(), kCanaryBytes) == 0;
    bool back = std::memcmp(base + kCanaryBytes + s.payload, canary.data(), kCanaryBytes) == 0;
    if (!front || !back) {
      f.canary_broken = std::string(back ? "before the start" : "past the end") + " of '" +
                        s.param->name + "' (" + std::to_string(s.payload) + " bytes)";
      break;
    }
  }
  for (const Slot& s : layout.slots) {
    if (s.param->role != "in" || !f.input_changed.empty()) continue;
    const std::vector<uint8_t>& orig = in.buffers.at(s.param->name);
    const uint8_t* got = raw.image + s.offset + kCanaryBytes;
    if (std::memcmp(got, orig.data(), s.payload) != 0) {
      size_t first = 0;
      while (first < s.payload && got[first] == orig[first]) ++first;
      f.input_changed = "'" + s.param->name + "' (first changed byte at " + std::to_string(first) +
                        " of " + std::to_string(s.payload) + ")";
    }
  }
  return raw;
}

CallResult Session::call_once(const CaseSpec& c, const ProblemData& in, bool timed) {
  CallResult r;
  Layout layout = layout_for(spec_, in.dims);
  const std::vector<const ParamSpec*> outs = spec_.outputs();
  // Outputs whose type has no NaN get a random poison byte per call; an untimed call (a
  // test) of such an output is made twice, the second time with the complementary poison,
  // so that an element never written is told apart from one that equals the poison.
  std::vector<Poison> poisons(outs.size()), second_poisons(outs.size());
  bool twice = false;
  for (size_t i = 0; i < outs.size(); ++i) {
    random_bytes(&poisons[i].byte, 1);
    second_poisons[i].byte = static_cast<uint8_t>(~poisons[i].byte);
    twice |= !timed && !dtype_has_nan_poison(outs[i]->dtype);
  }
  RawCall raw = send_call(c, in, timed, layout, poisons);
  if (raw.judge_failed) {
    r.decision = {Verdict::kNotRun, fatal_};
    return r;
  }
  r.copy_allowance_ms = raw.copy_allowance_ms;
  r.window = raw.window;
  r.delivery_model_ms = raw.delivery_model_ms;
  r.snapshot_model_ms = raw.snapshot_model_ms;
  r.event_ms = raw.event_ms;
  r.wall_ms = raw.wall_ms;
  r.empty_wall_ms = raw.empty_wall_ms;
  r.worker_go_ms = raw.worker_go_ms;
  r.host_call_ms = raw.host_call_ms;
  r.hold_timed_out = raw.hold_timed_out;
  r.busy_after_us = raw.busy_after_us;
  r.decision = decide_verdict(raw.facts);
  if (r.decision.verdict != Verdict::kPassed) return r;

  // Keep the first call's outputs, by name: the second call reuses the same host image.
  std::map<std::string, std::vector<uint8_t>> first;
  std::vector<std::vector<uint8_t>> second;
  for (size_t i = 0; i < outs.size(); ++i) {
    for (const Slot& s : layout.slots) {
      if (s.param == outs[i]) {
        const uint8_t* p = raw.image + s.offset + kCanaryBytes;
        first[outs[i]->name].assign(p, p + s.payload);
      }
    }
  }
  if (twice) {
    RawCall again = send_call(c, in, timed, layout, second_poisons);
    if (again.judge_failed) {
      r.decision = {Verdict::kNotRun, fatal_};
      return r;
    }
    r.decision = decide_verdict(again.facts);
    if (r.decision.verdict != Verdict::kPassed) {
      r.decision.reason = "on the repeated call: " + r.decision.reason;
      return r;
    }
    second.resize(outs.size());
    for (size_t i = 0; i < outs.size(); ++i) {
      for (const Slot& s : layout.slots) {
        if (s.param == outs[i]) {
          const uint8_t* p = again.image + s.offset + kCanaryBytes;
          second[i].assign(p, p + s.payload);
        }
      }
    }
  }

  Expected expected;
  std::string err;
  if (!compute_expected(in, &expected, &err, &first)) {
    fatal_ = "oracle failed: " + err;
    r.decision = {Verdict::kNotRun, fatal_};
    return r;
  }
  CallFacts facts = raw.facts;
  facts.outputs_checked = true;
  facts.outputs_ok = true;
  for (size_t i = 0; i < outs.size(); ++i) {
    int64_t rows = 0, cols = 0;
    output_matrix(*outs[i], in.dims, &rows, &cols);
    OutputReport o = compare_output(*outs[i], rows, cols, first.at(outs[i]->name).data(),
                                    poisons[i], second.empty() ? nullptr : second[i].data(),
                                    second_poisons[i], expected.at(outs[i]->name));
    if (!o.passed && facts.outputs_ok) {
      facts.outputs_ok = false;
      facts.outputs_summary = o.summary;
    }
    r.outputs.push_back(std::move(o));
  }
  r.decision = decide_verdict(facts);
  return r;
}

nlohmann::json Session::run_test(const CaseSpec& c) {
  auto t0 = Clock::now();
  const uint64_t seed = case_seed(c);
  nlohmann::json j = {{"name", c.name}, {"seed", seed}, {"dims", c.dims}};
  progress("  ....  " + c.name);
  ProblemData in;
  std::string err;
  CallResult r;
  if (!challenge_->generate(c, seed, &in, &err)) {
    fatal_ = "generator failed: " + err;
    r.decision = {Verdict::kNotRun, fatal_};
  } else if (start_or_fail(&r)) {
    r = call_once(c, in, false);
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

void Session::time_yardstick(const ProblemData& in, const TimingSpec& timing, double workload,
                             nlohmann::json* j) {
  const std::string name = challenge_->yardstick_name();
  if (name.empty()) return;
  std::string err;
  progress("  ....  yardstick");
  if (!judge_pre_call(&err)) {
    end_progress();
    log_ << "        yardstick not measured: " << err << "\n";
    return;
  }
  std::unique_ptr<Yardstick> y = challenge_->make_yardstick(in, &err);
  if (!y) {
    end_progress();
    if (!err.empty()) log_ << "        yardstick not measured: " << err << "\n";
    return;
  }
  PreCall& pc = *judge_pre_call_;
  SampleRun run = sample_loop(timing, [&](int call, bool, double* ms, std::string* e) {
    bool launched = true;
    PreCall::Timed t;
    const char* where = "";
    cudaError_t ce = pc.prepare(call);
    if (ce == cudaSuccess) {
      ce = pc.timed_call([&] { launched = y->launch(e); }, true, kCountAfterUs, &t, &where);
    } else {
      where = "L2 flush";
    }
    if (ce != cudaSuccess) {
      *e = std::string("yardstick: ") + where + ": " + cudaGetErrorString(ce);
      return false;
    }
    *ms = t.event_ms;
    return launched;
  });
  y.reset();
  end_progress();
  if (!run.ok || run.stats.median_ms <= 0) {
    log_ << "        yardstick not measured: " << run.error << "\n";
    return;
  }
  const double value = spec_.metric.value(workload, run.stats.median_ms);
  // A sweep times the yardstick on shapes the solution failed too: no ratio there.
  const nlohmann::json& mine = (*j)["value"];
  const bool have_mine = mine.is_number() && value > 0;
  (*j)["yardstick"] = {
      {"name", name},
      {"samples", run.stats.samples},
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
  bool generated = false;  // `in` holds inputs of this case (the yardstick's, in a sweep)
  std::vector<double> host_ms, wall_ms, net_wall_ms, empty_ms, worker_go_ms, device_ms;
  std::vector<WindowClock> windows;
  int held_too_long = 0;
  CallResult last;
  ProblemData in;
  uint64_t seed = first_seed;
  SampleRun run = sample_loop(
      timing,
      [&](int call, bool warm, double* ms, std::string* err) {
        // The first call uses the case's own seed (reproducible); every later one a fresh
        // seed the worker cannot predict, so replaying an earlier output can never pass.
        seed = call == 0 ? first_seed : random_u64();
        std::string e;
        if (!challenge_->generate(c, seed, &in, &e)) {
          generated = false;
          fatal_ = "generator failed: " + e;
          last = CallResult{};
          last.decision = {Verdict::kNotRun, fatal_};
          *err = fatal_;
          return false;
        }
        generated = true;
        if (!start_or_fail(&last)) {
          *err = last.decision.reason;
          return false;
        }
        last = call_once(c, in, true);
        if (last.decision.verdict != Verdict::kPassed) {
          last.decision.reason = "call " + std::to_string(call + 1) + " (seed " +
                                 std::to_string(seed) + "): " + last.decision.reason;
          *err = last.decision.reason;
          return false;
        }
        *ms = last.event_ms;
        if (!warm) {
          host_ms.push_back(last.host_call_ms);
          // A call whose blocking kernel timed out (solve() synchronised while queued)
          // spent kHoldTimeoutMs waiting before the timed work could start: the judge's
          // clock must have seen at least that, and the rest bounds the reported time.
          double wall = last.wall_ms;
          if (last.hold_timed_out) {
            if (wall < kHoldTimeoutMs) {
              last.decision = {Verdict::kTimingMismatch,
                               "call " + std::to_string(call + 1) +
                                   ": the worker said solve() synchronised while queued (a " +
                                   fmt(kHoldTimeoutMs, 0) +
                                   " ms wait), but the judge's clock "
                                   "saw the whole call take " +
                                   fmt(wall, 3) + " ms"};
              *err = last.decision.reason;
              return false;
            }
            wall -= kHoldTimeoutMs;
          }
          wall_ms.push_back(wall);
          // The device clock (verdict.h, kDeviceMarginMs; like the wall, less a blocking
          // kernel that timed out).
          if (window_) {
            device_ms.push_back(device_clock_ms(last.window, empty_window_, last.delivery_model_ms,
                                                last.snapshot_model_ms) -
                                (last.hold_timed_out ? kHoldTimeoutMs : 0.0));
            windows.push_back(last.window);
          }
          empty_ms.push_back(last.empty_wall_ms);
          net_wall_ms.push_back(wall - last.empty_wall_ms);
          worker_go_ms.push_back(last.worker_go_ms);
          held_too_long += last.hold_timed_out;
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
  const TimingStats& s = run.stats;
  const double wall_median = summarize(wall_ms).median_ms;
  // The overhead calibrated before the solution was loaded, plus what this case's copies in
  // the judge's window may add (none under a tool: no calibration there).
  const double start_overhead_ms = wrapper_.empty() ? overhead_ms_ + last.copy_allowance_ms : 0.0;
  // The judge's own clock bounds what the worker reported, over the whole benchmark.
  if (run.ok && last.decision.verdict == Verdict::kPassed && s.samples > 0) {
    // Each timed call's round trip minus the empty round trip made just before it.
    // The overhead beside the calls, capped by the one calibrated before the solution was
    // loaded (none under a tool: no calibration there).
    Decision clock =
        check_benchmark_clock(s.median_ms, wall_median,
                              wall_median - summarize(net_wall_ms).median_ms, start_overhead_ms);
    if (clock.verdict != Verdict::kPassed) {
      last.decision = clock;
      run.ok = false;
    }
    if (run.ok && !device_ms.empty()) {
      Decision device = check_device_clock(s.median_ms, summarize(device_ms).median_ms);
      if (device.verdict != Verdict::kPassed) {
        last.decision = device;
        run.ok = false;
      }
    }
  }
  const bool passed = run.ok && last.decision.verdict == Verdict::kPassed && s.samples > 0;
  const Verdict v = passed ? Verdict::kPassed
                           : (last.decision.verdict == Verdict::kPassed ? Verdict::kNotRun
                                                                        : last.decision.verdict);
  j["verdict"] = verdict_name(v);
  j["reason"] = passed ? "" : last.decision.reason;
  j["calls"] = run.calls;
  j["samples"] = s.samples;
  j["median_ms"] = s.median_ms;
  j["mean_ms"] = s.mean_ms;
  j["std_ms"] = s.std_ms;
  j["min_ms"] = s.min_ms;
  j["max_ms"] = s.max_ms;
  j["rse"] = s.rse;
  j["stopped_by"] = stop_reason_name(run.stopped);
  j["host_call_median_ms"] = summarize(host_ms).median_ms;
  j["judge_wall_median_ms"] = wall_median;
  j["judge_overhead_ms"] = wall_median - summarize(net_wall_ms).median_ms;
  j["judge_empty_median_ms"] = summarize(empty_ms).median_ms;
  j["judge_start_overhead_ms"] = overhead_ms_;
  j["judge_copy_allowance_ms"] = last.copy_allowance_ms;
  if (device_ms.empty()) {
    j["judge_device_median_ms"] = nullptr;
  } else {
    const double dev = summarize(device_ms).median_ms;
    j["judge_device_median_ms"] = dev;
    j["judge_device_margin_ms"] = device_margin_ms(dev);
  }
  j["judge_empty_window_ms"] = window_json(empty_window_);
  j["judge_window_median_ms"] = window_json(median_window(windows));
  j["judge_overhead_allowed_ms"] =
      allowed_overhead_ms(wall_median - summarize(net_wall_ms).median_ms, start_overhead_ms);
  j["worker_go_median_ms"] = summarize(worker_go_ms).median_ms;
  j["synchronising_calls"] = held_too_long;
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

  log_ << "  " << (passed ? "PASS" : "FAIL") << "  " << std::left << std::setw(10) << c.name
       << std::setw(18) << shape_text(spec_, c.dims) << std::right;
  if (passed) {
    log_ << "median " << fmt(s.median_ms, 4) << " ms  " << fmt(value, 1) << " "
         << spec_.metric.unit();
    if (limit() > 0) {
      log_ << "  (" << fmt(100 * value / limit(), 1) << "% of " << limit_name(spec_.limit) << ")";
    }
    log_ << "  n=" << s.samples << " rse " << fmt(100 * s.rse, 2) << "%\n";
    if (run.stopped == StopReason::kTimeCap && s.samples < timing.min_samples) {
      log_ << "        note: the " << fmt(timing.max_seconds, 0)
           << " s time cap ended sampling after " << s.samples
           << " samples, fewer than the spec's min_samples " << timing.min_samples
           << " (each call's generation and checking is slow at this size)\n";
    } else if (run.stopped != StopReason::kConverged) {
      log_ << "        note: sampling stopped by " << stop_reason_name(run.stopped)
           << " before the rse reached " << fmt(100 * timing.target_rse, 2) << "%\n";
    }
    if (held_too_long > 0) {
      log_ << "        note: in " << held_too_long << " of " << s.samples
           << " calls solve() waited for the device while its work was being queued (a "
              "synchronising call inside solve()); those calls count from that wait on\n";
    }
    const double host_median = summarize(host_ms).median_ms;
    if (host_median > 0.2 * s.median_ms && host_median > 0.05) {
      log_ << "        note: solve() spends " << fmt(host_median, 3)
           << " ms on the host per call (median)\n";
    }
    if ((opts_.action == Action::kSubmit || opts_.action == Action::kSweep) && opts_.yardstick)
      time_yardstick(in, timing, workload, &j);
  } else {
    log_ << "\n";
    CallResult shown = last;
    shown.decision.verdict = v;
    print_failure(log_, shown);
    log_ << "        replay: " << replay_args(c, seed) << "\n";
    // A sweep shows the yardstick on every shape it can, the solution's failures too.
    if (opts_.action == Action::kSweep && opts_.yardstick && generated)
      time_yardstick(in, timing, workload, &j);
  }
  j["wall_ms"] = seconds_since(t0) * 1000.0;
  return j;
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
    for (const std::string& name : opts_.cases) {
      if (!spec_.find_case(name)) {
        log_ << "fp4arena: --case: no case named '" << name << "' in " << spec_.path << "\n";
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
      {"timing_method",
       "per call: ~1 ms of memsets, an L2 flush (memset of 2x L2), device sync; a blocking "
       "kernel filling every SM holds the default stream while start event, solve() and stop "
       "event are queued, then is released; device work still running after the stop event "
       "is added to the time (and flagged past a threshold); the yardstick is timed by the "
       "same code and the same stopping rule"},
      {"tests", tests},
      {"benchmarks", benches},
      {"score",
       {{"geomean", score.geomean ? nlohmann::json(*score.geomean) : nlohmann::json(nullptr)},
        {"valid", score.valid},
        {"reason", score.reason}}},
      {"passed", all_passed},
      {"wall_seconds", seconds_since(t_start_)}};
  if (!opts_.cases.empty()) record["only_cases"] = opts_.cases;
  if (opts_.has_seed) record["replayed_seed"] = opts_.seed;
  outcome->record = record;

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
  if (opts_.action == Action::kSubmit && !opts_.output_path.empty() &&
      !check_output_path(opts_.output_path, &err)) {
    log_ << "fp4arena: --output: " << err << "\n";
    outcome.code = ExitCode::kUsage;
    return outcome;
  }
  if (opts_.action == Action::kSweep && !check_sweep_dir(sweep_dir(), &err)) {
    log_ << "fp4arena: --out: " << err << "\n";
    outcome.code = ExitCode::kUsage;
    return outcome;
  }
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
  for (const auto* list : {&spec_.tests, &spec_.benchmarks, &sweep_shapes_}) {
    if (list == &sweep_shapes_ && opts_.action != Action::kSweep) continue;
    if (list != &sweep_shapes_ && opts_.action == Action::kSweep) continue;
    for (const CaseSpec& c : *list) {
      if (selected(c)) shm_bytes_ = std::max(shm_bytes_, layout_for(spec_, c.dims).total);
    }
  }
  if (opts_.action == Action::kSweep) {
    outcome.code = run_sweep(&outcome);
    return outcome;
  }

  if (opts_.action == Action::kSanitize || opts_.action == Action::kProfile) {
    nlohmann::json record = {
        {"schema", std::string("fp4arena.") + action_name(opts_.action) + ".v2"},
        {"judge_version", FP4ARENA_VERSION},
        {"created_utc", utc_now()},
        {"challenge", {{"name", spec_.name}, {"spec_version", spec_.spec_version}}},
        {"solution", {{"path", opts_.solution_path}, {"sha256", compiled_.source_sha256}}},
        {"device", device_to_json(device_, nvcc_version_)}};
    outcome.code = opts_.action == Action::kSanitize ? run_sanitize(&record) : run_profile(&record);
    worker_.reset();
    reap_orphans();
    for (const std::string& f : tool_logs_) log_ << "tool log " << f << "\n";
    record["tool_logs"] = tool_logs_;
    outcome.record = record;
    return outcome;
  }

  // The judge's memory (expected outputs) must not be readable by the worker through
  // /proc/<pid>/mem or ptrace, even under the same user.
  prctl(PR_SET_DUMPABLE, 0);

  std::vector<nlohmann::json> tests, benches;
  auto sel = [this](const CaseSpec& c) { return selected(c); };
  if (std::any_of(spec_.tests.begin(), spec_.tests.end(), sel)) log_ << "tests\n";
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
  outcome.code = finish(tests, benches, &outcome);
  if (opts_.action == Action::kSubmit) write_record(&outcome);
  return outcome;
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
    rep.shapes.push_back(std::move(s));
  }
  progress_tag_.clear();
  worker_.reset();
  reap_orphans();
  rep.wall_seconds = seconds_since(t_start_);

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
  wrapper_ = {ncu,
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
  timeout_scale_ = 60;  // ncu replays each kernel once per metric pass
  exit_grace_seconds_ = 300;
  shm_bytes_ = layout_for(spec_, c->dims).total;
  log_ << "profile  " << c->name << " " << shape_text(spec_, c->dims) << ", one call under " << ncu
       << " --clock-control none\n";
  ProblemData in;
  std::string err;
  if (!challenge_->generate(*c, case_seed(*c), &in, &err)) {
    return fail_internal("generator failed: " + err);
  }
  CallResult failed_start;
  if (!start_or_fail(&failed_start)) {
    log_ << "  " << verdict_name(failed_start.decision.verdict) << ": "
         << failed_start.decision.reason << "\n";
    return fatal_.empty() ? ExitCode::kRuntimeError : fail_internal(fatal_);
  }
  CallResult v = call_once(*c, in, false);
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
  auto num = [](double v, int prec) { return v < 0 ? std::string("n/a") : fmt(v, prec); };
  log_ << "  " << std::left << std::setw(44) << "kernel" << std::right << std::setw(12)
       << "time (us)" << std::setw(8) << "SM %" << std::setw(10) << "tensor %" << std::setw(9)
       << "DRAM %" << std::setw(16) << "smem conflicts"
       << "  busiest pipe  top stalls (cycles per instruction)"
       << "\n";
  nlohmann::json ks = nlohmann::json::array();
  double total_us = 0;
  for (const KernelProfile& k : kernels) {
    std::string name = k.name.size() > 42 ? k.name.substr(0, 39) + "..." : k.name;
    log_ << "  " << std::left << std::setw(44) << name << std::right << std::setw(12)
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
    log_ << "  " << (stalls.empty() ? std::string("n/a") : stalls) << "\n";
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
  Session s(opts, log);
  return s.run();
}

}  // namespace fp4arena
