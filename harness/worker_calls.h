// The judge's call protocol, internal to harness/judge*.cc: WorkerCalls owns the worker, the
// judge's window on its buffers (harness/call_window.h), the calibration of the judge's clock
// and the windows' sequence numbers, and gives one window of calls as a RawWindow (what the
// replies, the judge's events and the buffers showed), never a verdict: judging the answers
// is the session's (judge_calls.cc). Also the small types the session shares with it.
#pragma once

#include <sys/random.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/call_window.h"
#include "harness/case_result.h"
#include "harness/challenge.h"
#include "harness/judge.h"
#include "harness/pre_call.h"
#include "harness/python_solution.h"
#include "harness/spec.h"
#include "harness/timing.h"
#include "harness/validate.h"
#include "harness/verdict.h"
#include "harness/worker_client.h"

namespace fp4arena {
namespace judging {

using Clock = std::chrono::steady_clock;

constexpr size_t kCanaryBytes = 4096;
constexpr size_t kAlign = 4096;
// Rounds of calibration windows (no kernel, one null kernel, nine) per worker start.
constexpr int kCalibrationWindows = 11;
// WindowMethod::kV2's model windows (verdict.h): the most sets, each buffer's most bytes,
// and the windows of each kind whose medians make a model.
constexpr int kModelSets = 16;
constexpr size_t kModelBufferBytes = size_t(64) << 20;
constexpr int kModelRounds = 5;
// While its window runs, the judge looks this long at a time for a message from the worker
// (only a late "queued" is allowed; a failure's reply or a closed channel ends the window).
constexpr double kWindowPollSeconds = 0.001;

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

// How many calls a window makes (WorkerCalls::calls_for): enough for `target_ms` of calls of
// `per_call_ms` each, within `budget_bytes` of device memory (each set's `set_bytes` taken
// twice: the worker's buffers and the judge's staged inputs and snapshot), within
// `max_delivery_bytes` of delivery where it is not 0 (`delivered_bytes` a set: inputs copied,
// outputs filled; WindowMethod::kV2) and within kMaxWindowCalls; at least one.
int window_calls(double per_call_ms, double target_ms, size_t set_bytes, size_t budget_bytes,
                 size_t delivered_bytes, size_t max_delivery_bytes);

// One window's calls as the judge received them, before the answers are checked.
struct RawWindow {
  CallFacts facts;      // how the window ended, the worker's word, the first integrity failure
  int failed_set = -1;  // the set whose canary or input check failed
  WindowClock clock;    // the judge's events (harness/call_window.h)
  double delivery_model_ms = 0, snapshot_model_ms = 0;
  double worker_event_ms = 0, host_call_ms = 0;  // the worker's word, for the whole window
  bool queued_late = false;   // solve() had not returned kQueueWaitSeconds after go was asked
  bool judge_failed = false;  // the judge's own CUDA work failed (failure() says how)
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

// How the worker of a tool (compute-sanitizer, ncu) is started: under `wrapper` ("{LOG}" in
// it becomes a fresh log file per start), with longer limits, and with the one call's buffers
// in shared memory instead of the judge's window (timing means nothing there).
struct ToolRun {
  std::vector<std::string> wrapper;
  double timeout_scale = 1;
  double exit_grace_seconds = 2;
};

class WorkerCalls {
 public:
  // The references are the session's and outlive this object; `compiled` is read at start().
  WorkerCalls(const JudgeOptions& opts, const Spec& spec, const CompileResult& compiled)
      : opts_(opts), spec_(spec), compiled_(compiled) {}

  // Starts a worker, calibrates the judge's clock on it (before user code is loaded) and
  // loads the solution. False on failure: *load_failed with *load_facts set when the
  // solution itself failed to load (its constructors crashed, exited or hung); otherwise
  // *err says why the worker could not start (the judge's failure).
  bool start(std::string* err, bool* load_failed = nullptr, CallFacts* load_facts = nullptr);
  bool running() const { return worker_ != nullptr; }
  // Ends the worker (a tool writes its log or report then); the next start() makes a new one.
  void stop() { worker_.reset(); }

  // Sends one window of calls, one per input set, and gathers what the replies and the
  // buffers show about their integrity. With the judge's window (the normal case) the worker
  // only allocates the buffers: the judge writes canaries and poison into them, delivers the
  // inputs inside the timed window and reads everything back itself. Under a tool the
  // buffers of the single call travel through shared memory.
  RawWindow send_window(const CaseSpec& c, const std::vector<ProblemData>& ins,
                        const Layout& layout, const std::vector<Poison>& poisons);
  // Set `set`'s outputs as read back after the last window, in output order.
  std::vector<std::vector<uint8_t>> outputs_of(const Layout& layout, int set) const;
  // How many calls a window of this layout makes when one call takes `per_call_ms`: enough
  // for `target_ms` of calls, within the memory budget and kMaxWindowCalls.
  int calls_for(double per_call_ms, const Layout& layout, double target_ms) const;

  // The judge's pre-call work (warm-up, L2 flush) in its own context: the yardstick's, and
  // the flush inside every call window. Null with *err set when it cannot be made.
  PreCall* judge_pre_call(std::string* err);

  // The solution's language: a Python solution's worker is python3 hosting the protocol.
  void use_language(Language language) { language_ = language; }
  // Workers started from now on run under a tool; its log files so far.
  void use_tool(ToolRun tool) { tool_ = std::move(tool); }
  const std::vector<std::string>& tool_logs() const { return tool_logs_; }
  // Shared memory for the buffers of a call under a tool (the largest layout's total).
  void need_shared_bytes(size_t bytes) { shm_bytes_ = std::max(shm_bytes_, bytes); }

  // Whether windows are timed by the judge's window (false under a tool).
  bool timed() const { return window_ != nullptr; }
  const WindowCalibration& calibration() const { return calib_; }
  // Why the calibration cannot time a call (another context shares the GPU), or "" when it
  // can: a timed window is then not made (Session::judge_window).
  const std::string& shared_gpu() const { return shared_gpu_; }
  // What the last worker's sandbox enforced.
  const std::string& sandbox() const { return sandbox_; }
  // A failure of the judge's own CUDA work (a window, a copy): the run cannot go on.
  const std::string& failure() const { return failure_; }

 private:
  bool start_calibrated_worker(WorkerOptions w, double timeout, std::string* err);
  bool make_window(std::string* err);
  // The calibration of the judge's window on a fresh worker (WindowCalibration), before any
  // user code is loaded, made again while calibration_doubt() (verdict.h) finds the GPU
  // shared. False + *err when the worker failed.
  bool calibrate_window(double timeout, std::string* err);
  // One calibration: kCalibrationWindows rounds of windows into calib_. False + *err when
  // the worker failed.
  bool measure_calibration(double timeout, std::string* err);
  // WindowMethod::kV2: the copy models from windows of the worker's own buffers (junk inputs,
  // a null kernel for the calls) on a calibrated worker, before the solution is loaded
  // (verdict.h, delivery_model_from); a window's delivery is capped at the largest model
  // window's from then on. False + *err when the worker failed or a model cannot be made.
  bool measure_copy_models(double timeout, std::string* err);
  // kModelRounds windows of `sets` sets of an input of `in` bytes and an output of `out`
  // bytes (no output when 0): their medians into *w. False + *err when the worker failed.
  bool time_model_window(int sets, size_t in, size_t out, double timeout, ModelWindow* w,
                         std::string* err);
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
  // One set's argument list for the worker (buffers by index, dims, scalars).
  nlohmann::json call_args(const ProblemData& in,
                           const std::map<std::string, int>& buffer_index) const;
  // The worker's own figures from its final reply (diagnostics; a malformed one ends the
  // window as the worker's failure).
  void read_worker_word(const CallReply& reply, RawWindow* raw) const;
  // What broke in one set after a window: a canary, else an input (both empty: nothing).
  struct SetIntegrity {
    std::string canary_broken, input_changed;
  };
  // One set's canaries, then (where they hold) its inputs.
  SetIntegrity set_integrity(const Layout& layout, const ProblemData& in,
                             const std::vector<uint8_t>& canary, int set) const;
  // Every set's canaries and inputs after the window; the first failure goes into raw.
  void check_integrity(const Layout& layout, const std::vector<ProblemData>& ins,
                       const std::vector<uint8_t>& canary, RawWindow* raw) const;
  // Set `set`'s buffers after a window, at their layout offsets.
  const uint8_t* set_image(int set) const {
    return window_ ? window_->host_image(set) : worker_->shm();
  }
  void set_judge_cuda_failure(const char* step, cudaError_t e);
  WorkerOptions worker_options();

  const JudgeOptions& opts_;
  const Spec& spec_;
  const CompileResult& compiled_;
  Language language_ = Language::kCuda;
  ToolRun tool_;
  std::vector<std::string> tool_logs_;
  size_t shm_bytes_ = 0;
  std::unique_ptr<WorkerProcess> worker_;
  std::unique_ptr<PreCall> judge_pre_call_;  // see judge_pre_call()
  // The judge's hands on the worker's buffers; null under a tool.
  std::unique_ptr<CallWindow> window_;
  // The judge's window calibrated before the solution was loaded (harness/verdict.h).
  WindowCalibration calib_;
  std::string shared_gpu_;          // calibration_doubt() of the last try, with the tries' count
  size_t window_budget_bytes_ = 0;  // device memory a window's sets may take, all copies counted
  size_t max_delivery_bytes_ = 0;   // kV2: the most bytes a window delivers (0: no cap)
  uint32_t window_seq_ = 0;         // the last window's sequence number (its go/done words)
  std::string sandbox_;
  std::string failure_;
};

}  // namespace judging
}  // namespace fp4arena
