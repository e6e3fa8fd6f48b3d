// The judge's calls to the worker: its start and calibration, one window of calls, and the
// checks of every call (integrity, then each output against the oracle).
#include "harness/session.h"

namespace fp4arena {
namespace judging {

namespace {

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
}  // namespace

PreCall* Session::judge_pre_call(std::string* err) {
  if (!judge_pre_call_) {
    auto p = std::make_unique<PreCall>();
    if (!p->init(1.0, err)) return nullptr;
    judge_pre_call_ = std::move(p);
  }
  return judge_pre_call_.get();
}

bool Session::start_worker(std::string* err, bool* load_failed, CallFacts* load_facts) {
  if (load_failed) *load_failed = false;
  WorkerOptions w;
  w.worker_path =
      opts_.worker_path.empty() ? self_exe_dir() + "/fp4arena_worker" : opts_.worker_path;
  w.so_path = compiled_.so_path;
  w.device = opts_.device;
  w.seccomp_allowlist = opts_.seccomp_allowlist;
  if (is_python(language_)) python_worker(&w);
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

// A Python solution's worker: python3 hosting the worker's protocol (python_worker.py and
// libfp4arena_pyworker.so, both beside the judge). Its seccomp filter is the denylist until the
// allowlist has been measured under python3 and torch (docs/python.md).
void Session::python_worker(WorkerOptions* w) const {
  w->worker_path = self_exe_dir() + "/libfp4arena_pyworker.so";
  w->interpreter = {python_program(), "-I", "-B"};
  w->host_script = self_exe_dir() + "/fp4arena_python_worker.py";
  w->extra_args = {"--language", language_name(language_)};
  w->seccomp_allowlist = false;
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
      // The shape and dtype are for the Python worker's tensors; the CUDA worker needs only
      // the buffer.
      nlohmann::json shape = nlohmann::json::array();
      for (const std::string& e : p.shape) {
        int64_t v = 0;
        std::string err;
        eval_expr(e, in.dims, &v, &err);  // checked when the case was
        shape.push_back(v);
      }
      args.push_back(
          {{"buffer", buffer_index.at(p.name)}, {"shape", shape}, {"dtype", dtype_name(p.dtype)}});
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

}  // namespace judging
}  // namespace fp4arena
