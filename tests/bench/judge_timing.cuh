// What the benchmark programs under tests/bench share: their start-up (the device they need,
// a CUDA check that ends the program), and the two figures they compare for a solution of a
// challenge: the judge's (harness/judge.h, --action run on one case: windows of back-to-back
// calls timed by the judge's own events, the worker in another process) and the in-process
// one (the same shared object loaded into this program and timed as the judge times a
// yardstick: harness/pre_call.h, time_back_to_back, CUDA events around the same number of
// back-to-back calls on distinct input sets after the same warm-up and clean L2 flush).
#pragma once

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "harness/challenge.h"
#include "harness/compile.h"
#include "harness/device_info.h"
#include "harness/judge.h"
#include "harness/pre_call.h"
#include "harness/process.h"
#include "harness/spec.h"

namespace fp4arena {
namespace bench {

/// Ends the program `program` with exit code 2 and a message naming `what` if `e` failed.
inline void check_or_exit(const char* program, cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s: %s\n", program, what, cudaGetErrorString(e));
  std::exit(2);
}

/// The current device's SM count and properties; ends the program `program` (exit code 2) on a
/// CUDA error or below sm_90, which its kernels need for `needs`.
inline void require_sm90(const char* program, const char* needs, int* sms, cudaDeviceProp* prop) {
  int device = 0, major = 0;
  check_or_exit(program, cudaGetDevice(&device), "cudaGetDevice");
  check_or_exit(program, cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, device),
                "attribute");
  check_or_exit(program, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
                "attribute");
  if (major < 9) {
    std::fprintf(stderr, "%s: needs sm_90 or later (%s)\n", program, needs);
    std::exit(2);
  }
  check_or_exit(program, cudaGetDeviceProperties(prop, device), "cudaGetDeviceProperties");
}

/// The judge's warm-up and flush (PreCall::init) on the current device; ends the program
/// `program` with exit code 2 and the reason if it cannot be made.
inline void init_pre_call_or_exit(const char* program, PreCall* pre) {
  std::string err;
  if (pre->init(1.0, &err)) return;
  std::fprintf(stderr, "%s: %s\n", program, err.c_str());
  std::exit(2);
}

/// A benchmark program's start: the current device, sm_90 or later for `needs` (its SM count
/// and properties), and the judge's warm-up and flush on it; ends the program `program` with
/// exit code 2 and the reason when either fails.
inline void start_or_exit(const char* program, const char* needs, int* sms, cudaDeviceProp* prop,
                          PreCall* pre) {
  require_sm90(program, needs, sms, prop);
  init_pre_call_or_exit(program, pre);
}

/// The window method a benchmark program's --window-method names ("v1" or "v2"); false for
/// anything else.
inline bool parse_window_method(const std::string& s, WindowMethod* m) {
  if (s != "v1" && s != "v2") return false;
  *m = s == "v1" ? WindowMethod::kV1 : WindowMethod::kV2;
  return true;
}

/// The median over `samples` of time_back_to_back(pre, calls, ...) of `launch`, in us.
inline bool in_process_us(const PreCall& pre, int calls, int samples, const IndexedLaunch& launch,
                          double* us, std::string* err) {
  std::vector<double> ms(size_t(samples), 0.0);
  for (int s = 0; s < samples; ++s) {
    if (!time_back_to_back(pre, calls, s, launch, &ms[size_t(s)], err)) return false;
  }
  std::sort(ms.begin(), ms.end());
  *us = ms[ms.size() / 2] * 1000.0;
  return true;
}

/// What the judge said of one benchmark case.
struct JudgedFigure {
  double median_ms = 0;
  int calls_per_sample = 0;
  double worker_reported_ms = 0;  ///< the worker's own events (a diagnostic)
  /// The seeds of each timed sample's calls (JudgeOutcome::sample_seeds): the in-process
  /// side replays the very inputs the judge timed.
  std::vector<std::vector<uint64_t>> sample_seeds;
};

/// Runs the judge on `solution` (--action run --case `case_name`, the worker next to this
/// program; windows of `window_ms` of calls, `method`'s copy models, verdict.h); false + *err
/// (the judge's summary included) unless the case passed.
inline bool judged_figure(const std::string& challenge_dir, const std::string& solution,
                          const std::string& case_name, JudgedFigure* out, std::string* err,
                          double window_ms = 1.0, WindowMethod method = kJudgeWindowMethod) {
  JudgeOptions o;
  o.window_target_ms = window_ms;
  o.window_method = method;
  o.challenge_dir = challenge_dir;
  o.solution_path = solution;
  o.action = Action::kRun;
  o.cases = {case_name};
  o.progress = false;
  o.worker_path = self_exe_dir() + "/fp4arena_worker";
  std::ostringstream log;
  JudgeOutcome r = judge(o, log);
  const nlohmann::json* b = nullptr;
  if (r.record.contains("benchmarks")) {
    for (const auto& x : r.record["benchmarks"]) {
      if (x.value("name", "") == case_name) b = &x;
    }
  }
  if (!b || b->value("verdict", "") != "passed") {
    *err = "the judge did not pass " + case_name + ":\n" + log.str();
    return false;
  }
  out->median_ms = (*b)["median_ms"].get<double>();
  out->calls_per_sample = b->value("calls_per_sample", 1);
  out->worker_reported_ms = b->value("worker_reported_median_ms", 0.0);
  auto seeds = r.sample_seeds.find(case_name);
  if (seeds != r.sample_seeds.end()) out->sample_seeds = seeds->second;
  return true;
}

/// One argument set per call of a sample: device buffers and the slots the call shim reads.
struct InProcessSets {
  std::vector<std::vector<void*>> bufs;
  std::vector<std::vector<uint64_t>> slots;
  std::vector<std::vector<void*>> args;
  ~InProcessSets() {
    for (auto& set : bufs) {
      for (void* d : set) cudaFree(d);
    }
  }
};

/// Fills set `i` (allocating its buffers the first time) with the case's inputs for `seed`.
inline bool fill_set(const Spec& spec, const Challenge& ch, const CaseSpec& c, uint64_t seed,
                     size_t i, InProcessSets* sets, std::string* err) {
  ProblemData in;
  if (!ch.generate(c, seed, &in, err)) return false;
  const bool first = sets->bufs[i].empty();
  sets->slots[i].assign(spec.params.size(), 0);
  sets->args[i].clear();
  size_t b = 0;
  for (size_t k = 0; k < spec.params.size(); ++k) {
    const ParamSpec& p = spec.params[k];
    sets->args[i].push_back(&sets->slots[i][k]);
    if (p.is_buffer()) {
      const size_t bytes = buffer_bytes(p, in.dims);
      if (first) {
        void* d = nullptr;
        if (cudaMalloc(&d, std::max<size_t>(bytes, 1)) != cudaSuccess) {
          *err = "cudaMalloc of an argument buffer";
          return false;
        }
        sets->bufs[i].push_back(d);
      }
      void* d = sets->bufs[i][b++];
      if (p.role == "in")
        cudaMemcpy(d, in.buffers.at(p.name).data(), bytes, cudaMemcpyHostToDevice);
      std::memcpy(&sets->slots[i][k], &d, sizeof d);
    } else if (p.role == "dim" || p.scalar_type == "int") {
      const int v = p.role == "dim" ? int(in.dims.at(p.name)) : int(in.scalars.at(p.name));
      std::memcpy(&sets->slots[i][k], &v, sizeof v);
    } else {
      const float v = float(in.scalars.at(p.name));
      std::memcpy(&sets->slots[i][k], &v, sizeof v);
    }
  }
  return true;
}

/// The solution's shared object loaded into this program: `calls` back-to-back calls per
/// sample, each on its own input set, timed by time_back_to_back; the median of `samples`.
/// With `seeds` (the judge's, one list per timed sample), sample s makes the calls of
/// seeds[s % seeds.size()] on those very inputs, so a cost that depends on the inputs
/// (w4a8's expert routing, say) is the same on both sides; without, every sample's sets are
/// drawn afresh. Each distinct list is generated and copied once and timed in every sample
/// that replays it (the clean flush before each window leaves nothing of the last one on
/// chip): generating a large case's list takes seconds, timing it about a millisecond.
/// `before_each`, where given, runs before each sample's flush and window (untimed).
inline bool in_process_figure(const PreCall& pre, const std::string& challenge_dir,
                              const std::string& solution, const std::string& case_name, int calls,
                              int samples, double* us, std::string* err,
                              const std::vector<std::vector<uint64_t>>& seeds = {},
                              const std::function<void()>& before_each = {}) {
  Spec spec;
  if (!load_spec(challenge_dir, &spec, err)) return false;
  std::unique_ptr<Challenge> ch = make_challenge(spec.name);
  const CaseSpec* c = spec.find_case(case_name);
  if (!ch || !c) {
    *err = "no challenge or case " + case_name;
    return false;
  }
  DeviceInfo dev;
  CompileOptions copts;
  if (query_device(0, &dev, err))
    copts.arch = arch_for_compute_capability(dev.cc_major, dev.cc_minor);
  err->clear();
  CompileResult compiled;
  if (!compile_solution(spec, solution, copts, &compiled, err) || !compiled.ok) {
    if (err->empty()) *err = "compile failed: " + compiled.diagnostics;
    return false;
  }
  void* so = dlopen(compiled.so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  using CallFn = void (*)(void* const*);
  CallFn call = so ? reinterpret_cast<CallFn>(dlsym(so, "fp4arena_call")) : nullptr;
  if (!call) {
    *err = std::string("cannot load ") + compiled.so_path + ": " + dlerror();
    return false;
  }
  InProcessSets sets;
  const size_t n = static_cast<size_t>(calls);
  sets.bufs.resize(n);
  sets.slots.resize(n);
  sets.args.resize(n);
  std::vector<double> ms(static_cast<size_t>(samples), 0.0);
  const int distinct = seeds.empty() ? samples : std::min(samples, int(seeds.size()));
  auto launch = [&](int i, std::string*) {
    call(sets.args[size_t(i)].data());
    return true;
  };
  for (int d = 0; d < distinct; ++d) {
    const std::vector<uint64_t>* judged = seeds.empty() ? nullptr : &seeds[size_t(d)];
    if (judged && judged->size() != n) {
      *err = "the judge's sample has " + std::to_string(judged->size()) + " calls, not " +
             std::to_string(n);
      return false;
    }
    for (size_t i = 0; i < n; ++i) {
      const uint64_t seed = judged ? (*judged)[i] : 1000 + uint64_t(d) * n + i;
      if (!fill_set(spec, *ch, *c, seed, i, &sets, err)) return false;
    }
    // Sample s replays list s % distinct.
    for (int s = d; s < samples; s += distinct) {
      if (before_each) before_each();
      if (!time_back_to_back(pre, calls, s, launch, &ms[size_t(s)], err)) return false;
    }
  }
  std::sort(ms.begin(), ms.end());
  *us = ms[ms.size() / 2] * 1000.0;
  return true;
}

}  // namespace bench
}  // namespace fp4arena
