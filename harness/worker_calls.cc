// The judge's call protocol (harness/worker_calls.h): the worker's start and the calibration
// of the judge's clock, one window of calls, and what its replies and buffers show.
#include "harness/worker_calls.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "harness/process.h"
#include "harness/text.h"
#include "reference/parallel.h"

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
// A Python solution's worker: python3 hosting the worker's protocol (python_worker.py and
// libfp4arena_pyworker.so, both beside the judge). Its seccomp filter is the CUDA worker's
// (the allowlist by default): the census of a judged PyTorch and Triton run on an H200 made no
// call outside it (docs/python.md).
void python_worker(Language language, WorkerOptions* w) {
  w->worker_path = self_exe_dir() + "/libfp4arena_pyworker.so";
  w->interpreter = {python_program(), "-I", "-B"};
  w->host_script = self_exe_dir() + "/fp4arena_python_worker.py";
  w->extra_args = {"--language", language_name(language)};
}
}  // namespace

PreCall* WorkerCalls::judge_pre_call(std::string* err) {
  if (!judge_pre_call_) {
    auto p = std::make_unique<PreCall>();
    if (!p->init(1.0, err)) return nullptr;
    judge_pre_call_ = std::move(p);
  }
  return judge_pre_call_.get();
}

WorkerOptions WorkerCalls::worker_options() {
  WorkerOptions w;
  w.worker_path =
      opts_.worker_path.empty() ? self_exe_dir() + "/fp4arena_worker" : opts_.worker_path;
  w.so_path = compiled_.so_path;
  w.device = opts_.device;
  w.seccomp_allowlist = opts_.seccomp_allowlist;
  if (is_python(language_)) python_worker(language_, &w);
  // Shared memory carries the buffers only under a tool; with the judge's window it stays
  // one page.
  w.shm_bytes = tool_.wrapper.empty() ? 4096 : shm_bytes_;
  w.exit_grace_seconds = tool_.exit_grace_seconds;
  for (std::string arg : tool_.wrapper) {
    if (arg == "{LOG}") {
      const char* tmp = std::getenv("TMPDIR");
      arg = std::string(tmp && *tmp ? tmp : "/tmp") + "/fp4arena-" + std::to_string(getpid()) +
            "-tool-" + std::to_string(tool_logs_.size()) + ".log";
      unlink(arg.c_str());
      tool_logs_.push_back(arg);
    }
    w.wrapper.push_back(arg);
  }
  return w;
}

bool WorkerCalls::make_window(std::string* err) {
  PreCall* pre = judge_pre_call(err);
  if (!pre) return false;
  auto cw = std::make_unique<CallWindow>();
  if (!cw->init(pre, err)) return false;
  window_ = std::move(cw);
  size_t free_bytes = 0, total_bytes = 0;
  cudaMemGetInfo(&free_bytes, &total_bytes);
  window_budget_bytes_ = std::min<size_t>(size_t(0.3 * double(free_bytes)), size_t(24) << 30);
  return true;
}

bool WorkerCalls::start(std::string* err, bool* load_failed, CallFacts* load_facts) {
  if (load_failed) *load_failed = false;
  const WorkerOptions w = worker_options();
  if (!is_executable(w.worker_path)) {
    *err = "worker program not found at " + w.worker_path + " (build the fp4arena_worker target)";
    return false;
  }
  // The judge's window on the worker's buffers, set up (and its copies timed) before the
  // first worker runs; the mappings of an earlier worker go with it.
  if (tool_.wrapper.empty() && !window_ && !make_window(err)) return false;
  const double timeout = tool_.timeout_scale * spec_.call_timeout_seconds;
  if (!start_calibrated_worker(w, timeout, err)) return false;
  if (window_ && opts_.window_method == WindowMethod::kV2 && max_delivery_bytes_ == 0 &&
      !measure_copy_models(timeout, err)) {
    worker_.reset();
    return false;
  }
  sandbox_ = worker_->sandbox();
  CallReply loaded = worker_->call({{"op", "load"}}, timeout);
  if (loaded.outcome == CallOutcome::kOk) return true;
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

bool WorkerCalls::start_calibrated_worker(WorkerOptions w, double timeout, std::string* err) {
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
    failure_.clear();
  }
}

bool WorkerCalls::calibrate_window(double timeout, std::string* err) {
  CallReply r = worker_->call(
      prepare_request(nlohmann::json::array(), nlohmann::json::array({nlohmann::json::array()}), 1),
      timeout);
  std::string why;
  if (r.outcome == CallOutcome::kOk && (!window_->map({}, {}, 1, &why) || !map_sync(r, &why) ||
                                        window_->stage({{}}) != cudaSuccess)) {
    r.outcome = CallOutcome::kWorkerError;
    r.detail = why.empty() ? "the judge could not stage an empty window" : why;
  }
  if (r.outcome != CallOutcome::kOk) {
    *err = "worker failed while the judge calibrated its clock: " + r.detail;
    return false;
  }
  // A calibration taken while another context's work shares the GPU is not used for timing
  // (calibration_doubt, verdict.h): the judge tries again; shared_gpu() keeps the last doubt.
  for (int t = 1;; ++t) {
    if (!measure_calibration(timeout, err)) return false;
    shared_gpu_ = calibration_doubt(calib_);
    if (shared_gpu_.empty()) return true;
    if (t == kCalibrationTries) {
      shared_gpu_ += " (" + std::to_string(t) + " calibrations, " +
                     fixed(kCalibrationRetrySeconds, 1) + " s apart)";
      return true;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(kCalibrationRetrySeconds));
  }
}

bool WorkerCalls::measure_calibration(double timeout, std::string* err) {
  // Windows of no kernel, of one null kernel and of nine, interleaved: the switches are
  // (9 * one - nine) / 8 (verdict.h, switch_ms_from).
  std::vector<double> memops, one, nine;
  std::vector<WindowClock> ones;
  CallReply r;
  r.outcome = CallOutcome::kOk;
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
  calib_.switch_spread_ms = switch_spread_ms(one, nine);
  calib_.memops_ms = summarize(memops).median_ms;
  calib_.pre_ms = m.pre_ms;
  calib_.post_ms = m.post_ms;
  return true;
}

bool WorkerCalls::measure_copy_models(double timeout, std::string* err) {
  // Each set takes its input and output in the worker and again in the judge (staged,
  // snapshot): four buffers' bytes within the window's budget.
  const size_t bytes =
      std::min(kModelBufferBytes, window_budget_bytes_ / (4 * kModelSets)) / kAlign * kAlign;
  if (bytes < (size_t(1) << 20)) {
    *err = "too little free device memory to measure the judge's copy models (" +
           std::to_string(window_budget_bytes_ >> 20) + " MiB for a window)";
    return false;
  }
  window_->refill_outputs();
  ModelWindow one, many, inputs_only;
  if (!time_model_window(1, bytes, bytes, timeout, &one, err) ||
      !time_model_window(kModelSets, bytes, bytes, timeout, &many, err) ||
      !time_model_window(kModelSets, bytes, 0, timeout, &inputs_only, err)) {
    return false;
  }
  CopyModel delivery, snapshot;
  if (!delivery_model_from(one, many, inputs_only, calib_.pre_ms, &delivery, err) ||
      !snapshot_model_from(one, many, calib_.post_ms, &snapshot, err)) {
    return false;
  }
  window_->use_models(delivery, snapshot);
  max_delivery_bytes_ = size_t(kModelSets) * 2 * bytes;
  return true;
}

bool WorkerCalls::time_model_window(int sets, size_t in, size_t out, double timeout, ModelWindow* w,
                                    std::string* err) {
  WindowPlan p;
  p.canary.assign(kCanaryBytes, 0xC3);
  static const std::vector<uint8_t> junk(kModelBufferBytes, 0x5A);
  nlohmann::json buffers = nlohmann::json::array();
  auto add = [&](size_t bytes, bool output) {
    p.offsets.push_back(0);  // read_back() is not used: a model window checks nothing
    p.buffers.push_back(WindowBuffer{bytes, kCanaryBytes, output, 0xA5});
    buffers.push_back({{"offset", 0}, {"size", bytes}, {"canary", kCanaryBytes}});
  };
  add(in, false);
  if (out > 0) add(out, true);
  p.inputs.assign(size_t(sets), {junk.data()});
  nlohmann::json set_args = nlohmann::json::array();
  for (int s = 0; s < sets; ++s) set_args.push_back(nlohmann::json::array());
  CallReply r = worker_->call(prepare_request(buffers, set_args, sets), timeout);
  RawWindow raw;
  if (r.outcome == CallOutcome::kOk && !load_window(r, p, sets, &raw)) {
    r = {CallOutcome::kWorkerError, raw.facts.end_detail, {}};
  }
  std::vector<double> pre, post;
  for (int i = 0; i < kModelRounds && r.outcome == CallOutcome::kOk; ++i) {
    WindowClock clock;
    bool late = false;
    r = run_window({{"op", "calibrate"}, {"kernels", 1}}, timeout, &clock, &late);
    pre.push_back(clock.pre_ms);
    post.push_back(clock.post_ms);
  }
  if (r.outcome != CallOutcome::kOk) {
    *err = "worker failed while the judge measured its copy models: " + r.detail;
    return false;
  }
  *w = ModelWindow{sets,
                   double(in),
                   double(out),
                   out ? double(out + 2 * kCanaryBytes) : 0.0,
                   summarize(pre).median_ms,
                   summarize(post).median_ms};
  return true;
}

nlohmann::json WorkerCalls::prepare_request(const nlohmann::json& buffers,
                                            const nlohmann::json& set_args, int sets) const {
  // With the judge's window the worker only allocates and exports; under a tool it fills
  // the buffers from shared memory.
  return {{"op", "prepare"}, {"buffers", buffers}, {"set_args", set_args},
          {"sets", sets},    {"fill", !window_},   {"fresh", opts_.buffers == BufferMode::kFresh}};
}

void WorkerCalls::set_judge_cuda_failure(const char* step, cudaError_t e) {
  failure_ = std::string("the judge's ") + step + ": " + cudaGetErrorString(e);
}

bool WorkerCalls::map_sync(const CallReply& reply, std::string* err) {
  auto h = reply.data.find("sync");
  if (h == reply.data.end() || !h->is_string()) {
    *err = "malformed reply: no sync buffer handle";
    return false;
  }
  return window_->map_sync(h->get<std::string>(), err);
}

CallReply WorkerCalls::await_window(uint32_t seq, double timeout, Clock::time_point deadline,
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
    return {CallOutcome::kWorkerError, failure_, {}};
  }
  return r;
}

CallReply WorkerCalls::run_window(nlohmann::json request, double timeout, WindowClock* clock,
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
    return {CallOutcome::kWorkerError, failure_, {}};
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

int window_calls(double per_call_ms, double target_ms, size_t set_bytes, size_t budget_bytes,
                 size_t delivered_bytes, size_t max_delivery_bytes) {
  const double want = std::ceil(target_ms / std::max(per_call_ms, 1e-3));
  const double per_set = 2.0 * double(std::max<size_t>(set_bytes, 1));
  const double by_memory = std::floor(double(budget_bytes) / per_set);
  // kV2: no window delivers more than the largest model window did, so that its model is
  // never extrapolated.
  const double by_delivery =
      max_delivery_bytes == 0
          ? double(kMaxWindowCalls)
          : std::floor(double(max_delivery_bytes) / double(std::max<size_t>(delivered_bytes, 1)));
  return int(std::max(1.0, std::min({want, by_memory, by_delivery, double(kMaxWindowCalls)})));
}

int WorkerCalls::calls_for(double per_call_ms, const Layout& layout, double target_ms) const {
  size_t delivered = 0;
  for (const Slot& sl : layout.slots) delivered += sl.payload;
  return window_calls(per_call_ms, target_ms, layout.total, window_budget_bytes_, delivered,
                      max_delivery_bytes_);
}

WindowPlan WorkerCalls::plan_window(const Layout& layout, const std::vector<ProblemData>& ins,
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

bool WorkerCalls::load_window(const CallReply& reply, const WindowPlan& plan, int sets,
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
  f.end_detail = failure_;
  return false;
}

RawWindow WorkerCalls::send_window(const CaseSpec& c, const std::vector<ProblemData>& ins,
                                   const Layout& layout, const std::vector<Poison>& poisons) {
  RawWindow raw;
  const int sets = int(ins.size());
  const WindowPlan plan = plan_window(layout, ins, poisons);
  nlohmann::json req = plan.prepare;
  req["case"] = c.name;
  const double base_timeout =
      opts_.call_timeout_seconds > 0 ? opts_.call_timeout_seconds : spec_.call_timeout_seconds;
  // The window's time limit grows with its calls (the spec's limit is per call).
  const double timeout = tool_.timeout_scale * base_timeout * std::max(1, sets);
  CallFacts& f = raw.facts;
  f.under_tool = !tool_.wrapper.empty();
  CallReply reply = worker_->call(req, timeout);
  if (reply.outcome == CallOutcome::kOk && window_) {
    if (!load_window(reply, plan, sets, &raw)) return raw;
    reply = run_window({{"op", "go"}}, timeout, &raw.clock, &raw.queued_late);
    if ((raw.judge_failed = !failure_.empty())) return raw;
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
      f.end_detail = failure_;
      return raw;
    }
  }
  read_worker_word(reply, &raw);
  if (f.end == CallEnd::kOk) check_integrity(layout, ins, plan.canary, &raw);
  return raw;
}

nlohmann::json WorkerCalls::call_args(const ProblemData& in,
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

void WorkerCalls::read_worker_word(const CallReply& reply, RawWindow* raw) const {
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

WorkerCalls::SetIntegrity WorkerCalls::set_integrity(const Layout& layout, const ProblemData& in,
                                                     const std::vector<uint8_t>& canary,
                                                     int set) const {
  SetIntegrity r;
  const uint8_t* image = set_image(set);
  for (const Slot& sl : layout.slots) {
    const uint8_t* base = image + sl.offset;
    bool front = std::memcmp(base, canary.data(), kCanaryBytes) == 0;
    bool back = std::memcmp(base + kCanaryBytes + sl.payload, canary.data(), kCanaryBytes) == 0;
    if (!front || !back) {
      r.canary_broken = std::string(back ? "before the start" : "past the end") + " of '" +
                        sl.param->name + "' (" + std::to_string(sl.payload) + " bytes)";
      return r;
    }
  }
  for (const Slot& sl : layout.slots) {
    if (sl.param->role != "in") continue;
    const std::vector<uint8_t>& orig = in.buffers.at(sl.param->name);
    const uint8_t* got = image + sl.offset + kCanaryBytes;
    if (std::memcmp(got, orig.data(), sl.payload) != 0) {
      size_t first = 0;
      while (first < sl.payload && got[first] == orig[first]) ++first;
      r.input_changed = "'" + sl.param->name + "' (first changed byte at " + std::to_string(first) +
                        " of " + std::to_string(sl.payload) + ")";
      return r;
    }
  }
  return r;
}

void WorkerCalls::check_integrity(const Layout& layout, const std::vector<ProblemData>& ins,
                                  const std::vector<uint8_t>& canary, RawWindow* raw) const {
  // The sets side by side (a quantizer's window compares over a gigabyte of inputs); the
  // first set that failed is reported, as a loop over them in order would.
  std::vector<SetIntegrity> sets(ins.size());
  ParallelFor(ResolveThreads(0), ins.size(),
              [&](size_t s) { sets[s] = set_integrity(layout, ins[s], canary, int(s)); });
  for (size_t s = 0; s < sets.size(); ++s) {
    if (sets[s].canary_broken.empty() && sets[s].input_changed.empty()) continue;
    raw->facts.canary_broken = sets[s].canary_broken;
    raw->facts.input_changed = sets[s].input_changed;
    raw->failed_set = int(s);
    return;
  }
}

std::vector<std::vector<uint8_t>> WorkerCalls::outputs_of(const Layout& layout, int set) const {
  std::vector<std::vector<uint8_t>> out;
  const uint8_t* image = set_image(set);
  for (const Slot& sl : layout.slots) {
    if (sl.param->role == "in") continue;
    const uint8_t* p = image + sl.offset + kCanaryBytes;
    out.emplace_back(p, p + sl.payload);
  }
  return out;
}

}  // namespace judging
}  // namespace fp4arena
