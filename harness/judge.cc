#include "harness/judge.h"

#include <cuda_runtime.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <iomanip>
#include <memory>
#include <random>
#include <regex>
#include <sstream>

#include "harness/challenge.h"
#include "harness/device_info.h"
#include "harness/process.h"
#include "harness/rng.h"
#include "harness/spec.h"
#include "harness/timing.h"
#include "harness/tools.h"
#include "harness/validate.h"
#include "harness/worker_client.h"

namespace fp4arena {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kCanaryBytes = 4096;
constexpr size_t kAlign = 4096;
// Device work still running this long after the launch stream finished means the solution
// left work on another stream (it would escape the events that time it).
constexpr double kEscapeMinUs = 50;
constexpr double kEscapeFraction = 0.05;
constexpr double kCountAfterUs = 20;
// Above this many FLOPs the oracle runs on the GPU (the CPU oracle still checks the GPU
// oracle in the test suite).
constexpr double kGpuOracleFlops = 2e9;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string shape_text(const Spec& spec, const CaseSpec& c) {
  std::string s;
  for (const DimSpec& d : spec.dims)
    s += (s.empty() ? "" : "x") + std::to_string(c.dims.at(d.name));
  return s;
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

std::string author_of(const std::string& source) {
  std::smatch m;
  if (std::regex_search(source, m, std::regex(R"(//\s*author:\s*([^\r\n]+))"))) {
    std::string a = m[1];
    while (!a.empty() && std::isspace(static_cast<unsigned char>(a.back()))) a.pop_back();
    return a;
  }
  return "";
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
    size_t bytes = static_cast<size_t>(buffer_elements(p, dims)) * p.elem_bytes;
    l.slots.push_back({&p, l.total, bytes});
    l.total += (2 * kCanaryBytes + bytes + kAlign - 1) / kAlign * kAlign;
  }
  return l;
}

// The verdict of one call, judged from the worker's reply and the buffers it returned.
struct CallVerdict {
  std::string verdict = "passed";
  std::string reason;
  ValidationResult validation;
  double event_ms = 0;
  double host_call_ms = 0;      // time solve() itself ran on the host
  bool hold_timed_out = false;  // solve() waited for the device while being queued
  double busy_after_us = 0;
};

bool is_runtime_failure(const std::string& v) {
  return v == "crashed" || v == "cuda_error" || v == "timeout" || v == "early_exit";
}

class Session {
 public:
  Session(const JudgeOptions& opts, std::ostream& log) : opts_(opts), log_(log) {}

  JudgeOutcome run();

 private:
  bool start_worker(std::string* err);
  CallVerdict call_once(const CaseSpec& c, const ProblemData& in, bool flush_l2);
  bool compute_expected(const ProblemData& in, const CaseSpec& c, std::vector<float>* out,
                        std::string* err);
  nlohmann::json run_test(const CaseSpec& c);
  nlohmann::json run_benchmark(const CaseSpec& c);
  ExitCode run_sanitize(nlohmann::json* record);
  ExitCode run_profile(nlohmann::json* record);
  bool selected(const CaseSpec& c) const;
  void progress(const std::string& line);
  void end_progress();
  ExitCode fail_internal(const std::string& what);

  const JudgeOptions& opts_;
  std::ostream& log_;
  Spec spec_;
  std::unique_ptr<Challenge> challenge_;
  CompileResult compiled_;
  DeviceInfo device_;
  std::string nvcc_version_;
  std::unique_ptr<WorkerProcess> worker_;
  size_t shm_bytes_ = 0;
  std::mt19937_64 seeds_{std::random_device{}()};
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
};

bool Session::selected(const CaseSpec& c) const {
  if (opts_.cases.empty()) return true;
  return std::find(opts_.cases.begin(), opts_.cases.end(), c.name) != opts_.cases.end();
}

void Session::progress(const std::string& line) {
  if (!opts_.progress || !tty_) return;
  log_ << "\r\033[K" << line << std::flush;
  progress_shown_ = true;
}

void Session::end_progress() {
  if (progress_shown_) log_ << "\r\033[K" << std::flush;
  progress_shown_ = false;
}

bool Session::start_worker(std::string* err) {
  WorkerOptions w;
  w.worker_path =
      opts_.worker_path.empty() ? self_exe_dir() + "/fp4arena_worker" : opts_.worker_path;
  w.so_path = compiled_.so_path;
  w.device = opts_.device;
  w.shm_bytes = shm_bytes_;
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
  worker_ = WorkerProcess::start(w, err);
  return worker_ != nullptr;
}

bool Session::compute_expected(const ProblemData& in, const CaseSpec& c, std::vector<float>* out,
                               std::string* err) {
  bool gpu = gpu_ && case_flops(spec_, c.dims) >= kGpuOracleFlops;
  if (!challenge_->expected(in, gpu ? OracleDevice::kGpu : OracleDevice::kCpu, out, err)) {
    return false;
  }
  // A generator must keep every expected value representable in the output type.
  const double limit = spec_.output().elem_type == "__half" ? 65504.0 : 3.4e38;
  for (float v : *out) {
    if (!std::isfinite(v) || std::fabs(v) > limit) {
      *err = "case '" + c.name + "': the generator produced an expected value (" +
             std::to_string(v) + ") outside the output type's range";
      return false;
    }
  }
  return true;
}

CallVerdict Session::call_once(const CaseSpec& c, const ProblemData& in, bool flush_l2) {
  CallVerdict v;
  Layout layout = layout_for(spec_, in.dims);
  uint8_t* shm = worker_->shm();
  // A fresh canary pattern for every call, so no solution can know what to write back.
  Rng canary_rng(seeds_(), 0, 0);
  std::vector<uint8_t> canary(kCanaryBytes);
  for (size_t i = 0; i < kCanaryBytes; i += 8) {
    uint64_t x = canary_rng.next();
    std::memcpy(&canary[i], &x, 8);
  }
  nlohmann::json buffers = nlohmann::json::array();
  std::map<std::string, int> buffer_index;
  for (const Slot& s : layout.slots) {
    uint8_t* base = shm + s.offset;
    std::memcpy(base, canary.data(), kCanaryBytes);
    std::memcpy(base + kCanaryBytes + s.payload, canary.data(), kCanaryBytes);
    if (s.param->role == "in") {
      std::memcpy(base + kCanaryBytes, in.buffers.at(s.param->name).data(), s.payload);
    } else {
      std::memset(base + kCanaryBytes, 0xFF, s.payload);  // poison: all-ones NaN
    }
    buffer_index[s.param->name] = static_cast<int>(buffers.size());
    buffers.push_back({{"offset", s.offset}, {"size", s.payload}, {"canary", kCanaryBytes}});
  }
  nlohmann::json args = nlohmann::json::array();
  for (const ParamSpec& p : spec_.params) {
    if (p.is_buffer()) {
      args.push_back({{"buffer", buffer_index.at(p.name)}});
    } else if (p.role == "dim") {
      args.push_back({{"int", in.dims.at(p.name)}});
    } else if (p.elem_type == "int") {
      args.push_back({{"int", static_cast<int>(in.scalars.at(p.name))}});
    } else {
      args.push_back({{"float", static_cast<float>(in.scalars.at(p.name))}});
    }
  }
  nlohmann::json req = {
      {"op", "call"},         {"case", c.name},
      {"buffers", buffers},   {"args", args},
      {"flush_l2", flush_l2}, {"slot", opts_.buffers == "fresh" ? -1 : int(calls_made_++ % 3)}};
  double timeout = timeout_scale_ * (opts_.call_timeout_seconds > 0 ? opts_.call_timeout_seconds
                                                                    : spec_.call_timeout_seconds);
  CallReply reply = worker_->call(req, timeout);
  switch (reply.outcome) {
    case CallOutcome::kOk:
      break;
    case CallOutcome::kCudaError:
      v.verdict = "cuda_error";
      v.reason = reply.detail;
      return v;
    case CallOutcome::kCrashed:
      v.verdict = "crashed";
      v.reason = "the worker running solve() was " + reply.detail;
      return v;
    case CallOutcome::kEarlyExit:
      v.verdict = "early_exit";
      v.reason = "the worker " + reply.detail + " while solve() was running";
      return v;
    case CallOutcome::kTimeout:
      v.verdict = "timeout";
      v.reason = "solve() gave " + reply.detail;
      return v;
    case CallOutcome::kWorkerError:
      v.verdict = "crashed";
      v.reason = "the worker failed: " + reply.detail;
      return v;
  }
  const double event_ms = reply.data.value("event_ms", 0.0);
  v.busy_after_us = reply.data.value("busy_after_us", 0.0);
  v.host_call_ms = reply.data.value("host_call_ms", 0.0);
  v.hold_timed_out = reply.data.value("hold_timed_out", false);
  // Work still running after the stop event is part of the call: count it (past the few
  // microseconds an idle device takes to answer a synchronisation).
  v.event_ms = event_ms + (v.busy_after_us > kCountAfterUs ? v.busy_after_us / 1000.0 : 0.0);

  // Integrity checks come before the answer: a solution that wrote out of bounds or
  // touched its inputs gets that verdict even when its output happens to be right.
  for (const Slot& s : layout.slots) {
    const uint8_t* base = shm + s.offset;
    bool front = std::memcmp(base, canary.data(), kCanaryBytes) == 0;
    bool back = std::memcmp(base + kCanaryBytes + s.payload, canary.data(), kCanaryBytes) == 0;
    if (!front || !back) {
      v.verdict = "out_of_bounds_write";
      v.reason = std::string("solve() wrote ") + (back ? "before the start" : "past the end") +
                 " of '" + s.param->name + "' (" + std::to_string(s.payload) + " bytes)";
      return v;
    }
  }
  for (const Slot& s : layout.slots) {
    if (s.param->role != "in") continue;
    const std::vector<uint8_t>& orig = in.buffers.at(s.param->name);
    const uint8_t* got = shm + s.offset + kCanaryBytes;
    if (std::memcmp(got, orig.data(), s.payload) != 0) {
      size_t first = 0;
      while (first < s.payload && got[first] == orig[first]) ++first;
      v.verdict = "input_modified";
      v.reason = "solve() modified its input '" + s.param->name + "' (first changed byte at " +
                 std::to_string(first) + " of " + std::to_string(s.payload) + ")";
      return v;
    }
  }
  int before = reply.data.value("threads_before", 0), after = reply.data.value("threads_after", 0);
  // Under compute-sanitizer or ncu the tool's own threads and instrumentation overhead make
  // these two checks meaningless; they apply to run and submit.
  const bool under_tool = !wrapper_.empty();
  if (after > before && !under_tool) {
    v.verdict = "thread_escape";
    v.reason = "solve() returned with " + std::to_string(after - before) +
               " thread(s) it started still running";
    return v;
  }
  double escape_limit = std::max(kEscapeMinUs, kEscapeFraction * event_ms * 1000.0);
  if (v.busy_after_us > escape_limit && !under_tool) {
    v.verdict = "timing_escape";
    v.reason = "the GPU stayed busy for " + fmt(v.busy_after_us, 0) +
               " us after the launch stream finished (" + fmt(event_ms * 1000.0, 0) +
               " us timed): work was left running outside the default stream";
    return v;
  }

  const ParamSpec& out = spec_.output();
  const Slot* out_slot = nullptr;
  for (const Slot& s : layout.slots) {
    if (s.param == &out) out_slot = &s;
  }
  int64_t cols = 1, rows = 1;
  {
    std::string e;
    int64_t last = 0;
    eval_expr(out.shape.back(), in.dims, &last, &e);
    cols = last;
    rows = buffer_elements(out, in.dims) / std::max<int64_t>(1, cols);
  }
  std::vector<float> expected;
  std::string err;
  if (!compute_expected(in, c, &expected, &err)) {
    fatal_ = "oracle failed: " + err;
    v.verdict = "not_run";
    v.reason = fatal_;
    return v;
  }
  v.validation = validate_output(shm + out_slot->offset + kCanaryBytes, out.elem_type, expected,
                                 rows, cols, Tolerance{spec_.atol, spec_.rtol});
  if (!v.validation.passed) {
    v.verdict = "wrong_answer";
    v.reason = v.validation.summary;
  }
  return v;
}

nlohmann::json failure_details(const CallVerdict& v) {
  nlohmann::json j = {{"mismatches", v.validation.mismatches},
                      {"unwritten", v.validation.unwritten},
                      {"nonfinite", v.validation.nonfinite},
                      {"max_abs_err", v.validation.max_abs_err},
                      {"max_rel_err", v.validation.max_rel_err}};
  nlohmann::json worst = nlohmann::json::array();
  for (const Mismatch& m : v.validation.worst) {
    worst.push_back({{"row", m.row},
                     {"col", m.col},
                     {"expected", m.expected},
                     {"got", std::isfinite(m.got) ? nlohmann::json(m.got)
                                                  : nlohmann::json(std::to_string(m.got))}});
  }
  j["worst"] = worst;
  if (!v.validation.tile_map.empty()) j["tile_map"] = v.validation.tile_map;
  return j;
}

void print_failure(std::ostream& log, const CallVerdict& v) {
  log << "        " << v.verdict << ": " << v.reason << "\n";
  if (v.verdict != "wrong_answer") return;
  for (const Mismatch& m : v.validation.worst) {
    log << "        at (row " << m.row << ", col " << m.col << "): expected " << m.expected
        << ", got " << m.got << "\n";
  }
  std::istringstream map(v.validation.tile_map);
  std::string line;
  while (std::getline(map, line)) log << "      " << line << "\n";
}

nlohmann::json Session::run_test(const CaseSpec& c) {
  auto t0 = Clock::now();
  nlohmann::json j = {{"name", c.name}, {"seed", c.seed}};
  for (const auto& kv : c.dims) j[kv.first] = kv.second;
  progress("  ....  " + c.name);
  ProblemData in;
  std::string err;
  CallVerdict v;
  if (!challenge_->generate(c, c.seed, &in, &err)) {
    fatal_ = "generator failed: " + err;
    v.verdict = "not_run";
    v.reason = fatal_;
  } else {
    if (!worker_ && !start_worker(&err)) {
      fatal_ = err;
      v.verdict = "not_run";
      v.reason = err;
    } else {
      v = call_once(c, in, false);
    }
  }
  if (is_runtime_failure(v.verdict)) worker_.reset();  // a fresh worker for the next case
  end_progress();
  j["verdict"] = v.verdict;
  j["reason"] = v.reason;
  j["elements"] = v.validation.elements;
  j.update(failure_details(v));
  j["wall_ms"] = seconds_since(t0) * 1000.0;
  log_ << "  " << (v.verdict == "passed" ? "PASS" : "FAIL") << "  " << std::left << std::setw(24)
       << c.name << std::setw(18) << shape_text(spec_, c) << std::right;
  if (v.verdict == "passed") {
    log_ << "max abs err " << v.validation.max_abs_err << "\n";
  } else {
    log_ << "\n";
    print_failure(log_, v);
  }
  return j;
}

nlohmann::json Session::run_benchmark(const CaseSpec& c) {
  auto t0 = Clock::now();
  nlohmann::json j = {{"name", c.name}, {"seed", c.seed}};
  for (const auto& kv : c.dims) j[kv.first] = kv.second;
  double flops = case_flops(spec_, c.dims);
  j["flops"] = flops;
  TimingSpec timing = spec_.timing;
  if (opts_.action != "submit") {  // run: a quick look; submit: the full stopping rule
    timing.max_samples = std::min(timing.max_samples, 15);
    timing.min_samples = std::min(timing.min_samples, 5);
    timing.max_seconds = std::min(timing.max_seconds, 10.0);
    timing.warmup_calls = std::min(timing.warmup_calls, 2);
  }
  std::vector<double> ms, host_ms;
  int held_too_long = 0;
  CallVerdict v;
  ProblemData in;
  std::string err;
  int calls = 0;
  auto t_samples = Clock::now();
  for (;;) {
    bool warm = calls < timing.warmup_calls;
    if (!warm && calls == timing.warmup_calls) t_samples = Clock::now();
    if (!warm && should_stop(ms, timing, seconds_since(t_samples))) break;
    // The first call uses the case's own seed (reproducible); every later one a fresh seed
    // the worker cannot predict, so replaying an earlier output can never pass.
    uint64_t seed = calls == 0 ? c.seed : seeds_();
    if (!challenge_->generate(c, seed, &in, &err)) {
      fatal_ = "generator failed: " + err;
      v.verdict = "not_run";
      v.reason = fatal_;
      break;
    }
    if (!worker_ && !start_worker(&err)) {
      fatal_ = err;
      v.verdict = "not_run";
      v.reason = err;
      break;
    }
    v = call_once(c, in, true);
    ++calls;
    if (v.verdict != "passed") {
      v.reason =
          "call " + std::to_string(calls) + " (seed " + std::to_string(seed) + "): " + v.reason;
      break;
    }
    if (!warm) {
      ms.push_back(v.event_ms);
      host_ms.push_back(v.host_call_ms);
      held_too_long += v.hold_timed_out;
    }
    TimingStats s = summarize(ms);
    progress(
        "  ....  " + c.name + "  " + (warm ? "warm-up" : "sample " + std::to_string(ms.size())) +
        (ms.empty() ? ""
                    : "  median " + fmt(s.median_ms, 4) + " ms  rse " + fmt(100 * s.rse, 2) + "%"));
  }
  if (is_runtime_failure(v.verdict)) worker_.reset();
  end_progress();
  TimingStats s = summarize(ms);
  j["verdict"] = v.verdict;
  j["reason"] = v.reason;
  j["calls"] = calls;
  j["samples"] = s.samples;
  j["median_ms"] = s.median_ms;
  j["mean_ms"] = s.mean_ms;
  j["std_ms"] = s.std_ms;
  j["min_ms"] = s.min_ms;
  j["max_ms"] = s.max_ms;
  j["rse"] = s.rse;
  j["host_call_median_ms"] = summarize(host_ms).median_ms;
  j["synchronising_calls"] = held_too_long;
  double tflops =
      v.verdict == "passed" && s.median_ms > 0 ? flops / (s.median_ms * 1e-3) / 1e12 : 0;
  j["tflops"] = tflops;
  j["pct_of_peak"] =
      device_.peak_fp16_dense_tflops > 0 ? 100 * tflops / device_.peak_fp16_dense_tflops : 0;
  j["sm_clock_after_mhz"] = current_sm_clock_mhz(device_);
  if (v.verdict != "passed") j.update(failure_details(v));

  log_ << "  " << (v.verdict == "passed" ? "PASS" : "FAIL") << "  " << std::left << std::setw(10)
       << c.name << std::setw(18) << shape_text(spec_, c) << std::right;
  if (v.verdict == "passed") {
    log_ << "median " << fmt(s.median_ms, 4) << " ms  " << fmt(tflops, 1) << " TF/s";
    if (device_.peak_fp16_dense_tflops > 0)
      log_ << "  (" << fmt(j["pct_of_peak"].get<double>(), 1) << "% of peak)";
    log_ << "  n=" << s.samples << " rse " << fmt(100 * s.rse, 2) << "%\n";
    if (held_too_long > 0) {
      log_ << "        note: in " << held_too_long << " of " << s.samples
           << " calls solve() waited for the device while its work was being queued (a "
              "synchronising call inside solve()); those calls count from that wait on\n";
    }
    if (opts_.action == "submit" && opts_.yardstick) {
      double y_ms = 0;
      std::string y_err;
      progress("  ....  " + c.name + "  yardstick");
      if (challenge_->yardstick_ms(in, 20, &y_ms, &y_err) && y_ms > 0) {
        end_progress();
        double y_tflops = flops / (y_ms * 1e-3) / 1e12;
        j["cublas_fp16_ms"] = y_ms;
        j["cublas_fp16_tflops"] = y_tflops;
        j["ratio_to_cublas"] = tflops / y_tflops;
        log_ << "        cuBLAS FP16 (pre-dequantized operands) " << fmt(y_ms, 4) << " ms  "
             << fmt(y_tflops, 1) << " TF/s  -> ratio " << fmt(tflops / y_tflops, 2) << "\n";
      } else {
        end_progress();
        if (!y_err.empty()) log_ << "        yardstick not measured: " << y_err << "\n";
      }
    }
  } else {
    log_ << "\n";
    print_failure(log_, v);
  }
  j["wall_ms"] = seconds_since(t0) * 1000.0;
  return j;
}

ExitCode Session::fail_internal(const std::string& what) {
  log_ << "fp4arena: internal error: " << what << "\n";
  return ExitCode::kInternal;
}

JudgeOutcome Session::run() {
  JudgeOutcome outcome;
  auto t_start = Clock::now();
  std::string err;
  if (opts_.action != "check" && opts_.action != "run" && opts_.action != "submit" &&
      opts_.action != "sanitize" && opts_.action != "profile") {
    log_ << "fp4arena: unknown action '" << opts_.action << "'\n";
    outcome.code = ExitCode::kUsage;
    return outcome;
  }
  if (!load_spec(opts_.challenge_dir, &spec_, &err)) {
    log_ << "fp4arena: " << err << "\n";
    outcome.code = ExitCode::kUsage;
    return outcome;
  }
  challenge_ = make_challenge(spec_.name);
  if (!challenge_) {
    log_ << "fp4arena: " << spec_.path << ": field 'name': no challenge code is registered as '"
         << spec_.name << "' (registered: ";
    for (const std::string& n : registered_challenges()) log_ << n << " ";
    log_ << ")\n";
    outcome.code = ExitCode::kUsage;
    return outcome;
  }
  for (const auto* list : {&spec_.tests, &spec_.benchmarks}) {
    for (const CaseSpec& c : *list) {
      if (!challenge_->check_case(c, &err)) {
        log_ << "fp4arena: " << spec_.path << ": " << err << "\n";
        outcome.code = ExitCode::kUsage;
        return outcome;
      }
    }
  }
  for (const std::string& name : opts_.cases) {
    if (!spec_.find_case(name)) {
      log_ << "fp4arena: --case: no case named '" << name << "' in " << spec_.path << "\n";
      outcome.code = ExitCode::kUsage;
      return outcome;
    }
  }
  std::string source;
  if (!read_file(opts_.solution_path, &source, &err)) {
    log_ << "fp4arena: --solution: " << err << "\n";
    outcome.code = ExitCode::kUsage;
    return outcome;
  }

  // Device first: it decides the architecture the solution is compiled for.
  std::string no_gpu_reason;
  gpu_ = opts_.action != "check" && cuda_device_count(&no_gpu_reason) > 0;
  if (gpu_) {
    if (!query_device(opts_.device, &device_, &err)) {
      log_ << "fp4arena: --device " << opts_.device << ": " << err << "\n";
      outcome.code = ExitCode::kUsage;
      return outcome;
    }
    device_.arch = arch_for_compute_capability(device_.cc_major, device_.cc_minor);
    // The judge's own GPU work (oracle, yardstick) runs on the judged device too.
    cudaError_t e = cudaSetDevice(opts_.device);
    if (e != cudaSuccess) {
      log_ << "fp4arena: --device " << opts_.device << ": " << cudaGetErrorString(e) << "\n";
      outcome.code = ExitCode::kUsage;
      return outcome;
    }
  }
  CompileOptions copts;
  copts.arch = !opts_.arch.empty() ? opts_.arch : gpu_ ? device_.arch : "sm_90a";
  copts.cache_dir = opts_.cache_dir;
  device_.arch = copts.arch;
  std::string nvcc = find_nvcc();
  nvcc_version_ = nvcc.empty() ? "" : nvcc_version(nvcc);

  log_ << "fp4arena " << FP4ARENA_VERSION << " | " << spec_.name << " (spec v" << spec_.spec_version
       << ") | " << opts_.solution_path << "\n";
  progress("compile  ...");
  if (!compile_solution(spec_, opts_.solution_path, copts, &compiled_, &err)) {
    end_progress();
    log_ << "fp4arena: " << err << "\n";
    outcome.code = err.rfind("--arch", 0) == 0 ? ExitCode::kUsage : ExitCode::kInternal;
    return outcome;
  }
  end_progress();
  if (!compiled_.ok) {
    log_ << "compile  FAILED for " << copts.arch << " (nvcc " << nvcc_version_ << ")\n"
         << compiled_.diagnostics;
    if (!compiled_.diagnostics.empty() && compiled_.diagnostics.back() != '\n') log_ << "\n";
    outcome.code = ExitCode::kCompileError;
    return outcome;
  }
  log_ << "compile  ok"
       << (compiled_.cached ? " (cached)" : " in " + fmt(compiled_.seconds, 1) + " s") << "  "
       << copts.arch << "  nvcc " << nvcc_version_ << "  sha256 "
       << compiled_.source_sha256.substr(0, 12) << "\n";
  if (!compiled_.diagnostics.empty()) log_ << compiled_.diagnostics;
  if (opts_.action == "check") {
    log_ << "check    ok: compiles and " << spec_.function << "() matches the signature\n";
    outcome.code = ExitCode::kPassed;
    return outcome;
  }
  if (!gpu_) {
    log_ << "no CUDA GPU available (" << no_gpu_reason
         << "): the solution compiled and its signature matches, but nothing was run.\n";
    outcome.code = ExitCode::kNoGpu;
    return outcome;
  }
  log_ << "device   " << device_.name << " | " << device_.sm_count << " SMs | "
       << device_.sm_clock_max_mhz << " MHz max";
  if (device_.sm_clock_now_mhz >= 0) log_ << " (" << device_.sm_clock_now_mhz << " now)";
  log_ << " | driver " << (device_.driver_version.empty() ? "?" : device_.driver_version)
       << " | CUDA " << device_.cuda_driver;
  if (device_.peak_fp16_dense_tflops > 0) {
    log_ << " | dense FP16 peak " << fmt(device_.peak_fp16_dense_tflops, 0) << " TF/s";
  }
  log_ << "\n";

  auto selected = [this](const CaseSpec& c) { return this->selected(c); };
  for (const auto* list : {&spec_.tests, &spec_.benchmarks}) {
    for (const CaseSpec& c : *list) {
      if (selected(c)) shm_bytes_ = std::max(shm_bytes_, layout_for(spec_, c.dims).total);
    }
  }

  if (opts_.action == "sanitize" || opts_.action == "profile") {
    nlohmann::json record = {
        {"schema", "fp4arena." + opts_.action + ".v1"},
        {"judge_version", FP4ARENA_VERSION},
        {"created_utc", utc_now()},
        {"challenge", {{"name", spec_.name}, {"spec_version", spec_.spec_version}}},
        {"solution", {{"path", opts_.solution_path}, {"sha256", compiled_.source_sha256}}},
        {"device", device_to_json(device_, nvcc_version_)}};
    outcome.code = opts_.action == "sanitize" ? run_sanitize(&record) : run_profile(&record);
    worker_.reset();
    reap_orphans();
    for (const std::string& f : tool_logs_) log_ << "tool log " << f << "\n";
    record["tool_logs"] = tool_logs_;
    outcome.record = record;
    return outcome;
  }

  // The judge's memory (seed generator, expected outputs) must not be readable by the
  // worker through /proc/<pid>/mem or ptrace, even under the same user.
  prctl(PR_SET_DUMPABLE, 0);

  nlohmann::json tests = nlohmann::json::array(), benches = nlohmann::json::array();
  int passed = 0, total = 0;
  bool runtime_failure = false;
  if (std::any_of(spec_.tests.begin(), spec_.tests.end(), selected)) log_ << "tests\n";
  for (const CaseSpec& c : spec_.tests) {
    if (!selected(c)) continue;
    nlohmann::json r;
    if (!fatal_.empty()) {
      r = {{"name", c.name}, {"verdict", "not_run"}, {"reason", fatal_}};
    } else {
      r = run_test(c);
    }
    ++total;
    passed += r["verdict"] == "passed";
    runtime_failure |= is_runtime_failure(r["verdict"]);
    tests.push_back(r);
  }
  if (std::any_of(spec_.benchmarks.begin(), spec_.benchmarks.end(), selected))
    log_ << "benchmarks\n";
  for (const CaseSpec& c : spec_.benchmarks) {
    if (!selected(c)) continue;
    nlohmann::json r;
    if (!fatal_.empty()) {
      r = {{"name", c.name}, {"verdict", "not_run"}, {"reason", fatal_}};
    } else {
      r = run_benchmark(c);
    }
    ++total;
    passed += r["verdict"] == "passed";
    runtime_failure |= is_runtime_failure(r["verdict"]);
    benches.push_back(r);
  }
  worker_.reset();
  reap_orphans();

  // Score: the geometric mean of the benchmarks' TF/s, valid only when everything passed
  // and no figure is above what the device can physically do.
  nlohmann::json score = {{"tflops_geomean", nullptr}, {"valid", false}, {"reason", ""}};
  bool all_passed = passed == total && total > 0;
  if (!benches.empty() && all_passed) {
    double log_sum = 0;
    bool over = false;
    for (const auto& b : benches) {
      log_sum += std::log(b["tflops"].get<double>());
      over |= device_.peak_fp16_dense_tflops > 0 &&
              b["tflops"].get<double>() > device_.peak_fp16_dense_tflops;
    }
    double geo = std::exp(log_sum / double(benches.size()));
    score["tflops_geomean"] = geo;
    if (over) {
      score["reason"] = "over_peak: a benchmark ran faster than the device's dense FP16 peak of " +
                        fmt(device_.peak_fp16_dense_tflops, 0) +
                        " TF/s, which no exact solution can";
    } else {
      score["valid"] = true;
    }
  } else if (!all_passed) {
    score["reason"] =
        std::to_string(total - passed) + " of " + std::to_string(total) + " cases failed";
  } else {
    score["reason"] = "no benchmark case was run";
  }

  nlohmann::json record = {
      {"schema", "fp4arena.submit.v1"},
      {"judge_version", FP4ARENA_VERSION},
      {"action", opts_.action},
      {"created_utc", utc_now()},
      {"challenge", {{"name", spec_.name}, {"spec_version", spec_.spec_version}}},
      {"solution",
       {{"path", opts_.solution_path},
        {"sha256", compiled_.source_sha256},
        {"author", opts_.author.empty() ? author_of(source) : opts_.author}}},
      {"device", device_to_json(device_, nvcc_version_)},
      {"tolerance", {{"atol", spec_.atol}, {"rtol", spec_.rtol}}},
      {"buffers", opts_.buffers},
      {"timing_method",
       "per call: ~1 ms of memsets, an L2 flush (memset of 2x L2), device sync; a blocking "
       "kernel filling every SM holds the default stream while start event, solve() and stop "
       "event are queued, then is released; device work still running after the stop event "
       "is added to the time (and flagged past a threshold)"},
      {"tests", tests},
      {"benchmarks", benches},
      {"score", score},
      {"passed", all_passed && score["valid"].get<bool>()},
      {"wall_seconds", seconds_since(t_start)}};
  if (!opts_.cases.empty()) record["only_cases"] = opts_.cases;
  outcome.record = record;

  log_ << "score    ";
  if (!score["tflops_geomean"].is_null()) {
    log_ << "geomean " << fmt(score["tflops_geomean"].get<double>(), 1) << " TF/s";
    if (!score["valid"].get<bool>()) log_ << "  INVALID: " << score["reason"].get<std::string>();
  } else {
    log_ << "none (" << score["reason"].get<std::string>() << ")";
  }
  log_ << "\nresult   " << (record["passed"].get<bool>() ? "PASSED" : "FAILED") << "  " << passed
       << "/" << total << " cases passed in " << fmt(seconds_since(t_start), 1) << " s\n";

  if (!fatal_.empty()) {
    outcome.code = fail_internal(fatal_);
  } else if (runtime_failure) {
    outcome.code = ExitCode::kRuntimeError;
  } else if (!record["passed"].get<bool>()) {
    outcome.code = ExitCode::kFailed;
  } else {
    outcome.code = ExitCode::kPassed;
  }

  if (opts_.action == "submit") {
    std::string path = opts_.output_path;
    if (path.empty()) {
      std::string dir = opts_.results_dir + "/" + spec_.name + "/" + slug(device_.name);
      if (!make_dirs(dir, &err)) {
        outcome.code = fail_internal(err);
        return outcome;
      }
      path = dir + "/" + stem_of(opts_.solution_path) + "-" +
             compiled_.source_sha256.substr(0, 12) + ".json";
    }
    if (!write_file_atomic(path, record.dump(2) + "\n", &err)) {
      outcome.code = fail_internal(err);
      return outcome;
    }
    outcome.record_path = path;
    log_ << "record   " << path << "\n";
  }
  return outcome;
}

// Reads and concatenates the tool logs written since `first`.
std::string read_logs(const std::vector<std::string>& logs, size_t first) {
  std::string all;
  for (size_t i = first; i < logs.size(); ++i) {
    std::string text, ignored;
    if (read_file(logs[i], &text, &ignored)) all += text + "\n";
  }
  return all;
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
      failed |= r["verdict"] != "passed";
      runtime_failure |= is_runtime_failure(r["verdict"]);
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
  const CaseSpec* c = nullptr;
  if (!opts_.cases.empty()) {
    c = spec_.find_case(opts_.cases.front());
  } else {
    c = &spec_.benchmarks.front();
  }
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
              "--csv",
              "--page",
              "raw",
              "--log-file",
              "{LOG}"};
  timeout_scale_ = 60;  // ncu replays each kernel once per metric pass
  exit_grace_seconds_ = 300;
  shm_bytes_ = layout_for(spec_, c->dims).total;
  log_ << "profile  " << c->name << " " << shape_text(spec_, *c) << ", one call under " << ncu
       << " --clock-control none\n";
  ProblemData in;
  std::string err;
  if (!challenge_->generate(*c, c->seed, &in, &err))
    return fail_internal("generator failed: " + err);
  if (!start_worker(&err)) return fail_internal(err);
  CallVerdict v = call_once(*c, in, false);
  worker_.reset();  // ncu writes its report when the worker exits
  log_ << "  the profiled call's output: " << v.verdict << (v.reason.empty() ? "" : ": " + v.reason)
       << "\n";
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
       << "\n";
  nlohmann::json ks = nlohmann::json::array();
  double total_us = 0;
  for (const KernelProfile& k : kernels) {
    std::string name = k.name.size() > 42 ? k.name.substr(0, 39) + "..." : k.name;
    log_ << "  " << std::left << std::setw(44) << name << std::right << std::setw(12)
         << num(k.duration_us, 1) << std::setw(8) << num(k.sm_pct, 1) << std::setw(10)
         << num(k.tensor_pct, 1) << std::setw(9) << num(k.dram_pct, 1) << std::setw(16)
         << num(k.bank_conflicts, 0) << "\n";
    total_us += std::max(0.0, k.duration_us);
    ks.push_back({{"name", k.name},
                  {"duration_us", k.duration_us},
                  {"sm_throughput_pct", k.sm_pct},
                  {"tensor_pipe_pct", k.tensor_pct},
                  {"dram_throughput_pct", k.dram_pct},
                  {"shared_bank_conflicts", k.bank_conflicts}});
  }
  double flops = case_flops(spec_, c->dims);
  if (total_us > 0) {
    log_ << "  all kernels: " << fmt(total_us, 1)
         << " us = " << fmt(flops / (total_us * 1e-6) / 1e12, 1)
         << " TF/s (ncu serializes and replays kernels: time with --action submit, not this)\n";
  }
  (*record)["case"] = c->name;
  (*record)["kernels"] = ks;
  (*record)["verdict"] = v.verdict;
  return v.verdict == "passed"           ? ExitCode::kPassed
         : is_runtime_failure(v.verdict) ? ExitCode::kRuntimeError
                                         : ExitCode::kFailed;
}

}  // namespace

JudgeOutcome judge(const JudgeOptions& opts, std::ostream& log) {
  Session s(opts, log);
  return s.run();
}

}  // namespace fp4arena
