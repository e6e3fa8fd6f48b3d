// The worker's side of the judge's protocol: see worker_serve.h and, for the requests,
// worker_main.cc.
#include "harness/worker_serve.h"

#include <cuda_runtime.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "harness/ipc.h"
#include "harness/pre_call.h"
#include "harness/sandbox.h"
#include "harness/stream_memops.h"

namespace fp4arena {

[[noreturn]] void worker_fatal(const std::string& what) {
  std::string ignored;
  send_message(kWorkerSocketFd, {{"op", "fatal"}, {"error", what}}, &ignored);
  std::fprintf(stderr, "fp4arena_worker: %s\n", what.c_str());
  _exit(2);
}

namespace {

int count_threads() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

// This thread's CPU time in ms: it stops while the host runs something else.
double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

// Answers a call that hit a CUDA error and exits: the context may be unusable.
[[noreturn]] void cuda_failure(const char* where, cudaError_t e) {
  std::string ignored;
  send_message(kWorkerSocketFd,
               {{"ok", false},
                {"cuda_error", std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e)},
                {"where", where}},
               &ignored);
  _exit(3);
}

// The CUDA IPC handle of a buffer the worker allocated, for the judge (call_window.h).
std::string handle_of(const void* p) {
  cudaIpcMemHandle_t h;
  cudaError_t e = cudaIpcGetMemHandle(&h, const_cast<void*>(p));
  if (e != cudaSuccess) cuda_failure("cudaIpcGetMemHandle of an argument buffer", e);
  return hex_of_bytes(h.reserved, sizeof h.reserved);
}

struct Worker {
  SharedRegion shm;
  SolutionHooks hooks;
  bool pinned = false;
  // The window's argument-buffer sets, allocated once per layout and number of sets and
  // reused while both stay the same.
  struct Set {
    std::vector<uint8_t*> ptrs;
    std::vector<std::string> handles;  // CUDA IPC handles of ptrs
    std::vector<uint64_t> arg_slots;   // one value slot per parameter
    std::vector<void*> args;           // args[i] points at arg_slots[i]
  };
  std::vector<Set> sets;
  std::vector<size_t> set_sizes;
  // The sync buffer of the judge's window (harness/stream_memops.h): allocated once, its
  // handle sent with every prepare reply.
  uint8_t* sync = nullptr;
  std::string sync_handle;
  cudaEvent_t start = nullptr, stop = nullptr;

  // CUDA context, pinned shared memory and the runtime's lazy machinery: everything before
  // user code is loaded (the judge calibrates its clock on this).
  void setup(size_t shm_bytes, int device) {
    std::string err;
    if (!shm.attach(kWorkerShmFd, shm_bytes, &err)) worker_fatal(err);
    cudaError_t e = cudaSetDevice(device);
    // Waits for the device spin, so that the worker's CPU time across its wait after a window
    // is the wait (busy_after_us), not time the host gave to other processes.
    if (e == cudaSuccess) e = cudaSetDeviceFlags(cudaDeviceScheduleSpin);
    if (e == cudaSuccess) e = cudaFree(nullptr);  // create the context now, not in solve()
    if (e != cudaSuccess)
      worker_fatal(std::string("cannot open CUDA device: ") + cudaGetErrorString(e));
    // Pinned host memory makes the copies fast; pageable still works if pinning fails.
    pinned = cudaHostRegister(shm.data(), shm.size(), cudaHostRegisterDefault) == cudaSuccess;
    cudaGetLastError();
    // Warm up the runtime's lazy machinery (its helper threads included) before any
    // solve() runs, so that threads counted around solve() are the solution's own.
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    void* probe = nullptr;
    cudaMalloc(&probe, 4096);
    cudaMemsetAsync(probe, 0, 4096, s);
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
    cudaFree(probe);
    if (launch_null_kernel(cudaStreamLegacy) != cudaSuccess ||
        cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess ||
        cudaMalloc(reinterpret_cast<void**>(&sync), kSyncBytes) != cudaSuccess ||
        cudaMemset(sync, 0, kSyncBytes) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
      worker_fatal("CUDA warm-up failed");
    }
    sync_handle = handle_of(sync);
  }

  // Loads the solution: its constructors (or its module's code) run here, after calibration.
  void load(const std::string& path) { hooks.load(path); }

  // The staged window between prepare, go and collect.
  struct Region {
    size_t offset, total, canary;
  };
  std::vector<Region> regions;
  bool staged = false, ran = false, filled = false;

  // (Re)allocates `count` sets of the given buffer sizes unless they exist already (and
  // `fresh` is false). New sets are allocated before the old ones are freed, so a fresh set
  // never gets the addresses of the window before it.
  void allocate_sets(const std::vector<size_t>& sizes, int count, bool fresh) {
    if (!fresh && int(sets.size()) == count && set_sizes == sizes) return;
    std::vector<Set> next(static_cast<size_t>(count));
    for (Set& st : next) {
      for (size_t bytes : sizes) {
        uint8_t* p = nullptr;
        cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&p), std::max<size_t>(bytes, 1));
        if (e != cudaSuccess) cuda_failure("cudaMalloc of an argument buffer", e);
        st.ptrs.push_back(p);
      }
    }
    for (Set& st : sets) {
      for (uint8_t* p : st.ptrs) cudaFree(p);
    }
    sets = std::move(next);
    set_sizes = sizes;
  }

  // One set's arguments: buffer pointers past the leading canary, ints and floats. Returns
  // them as the hooks' prepare_set sees them: each buffer's pointer beside what the judge
  // said of it (shape, dtype).
  static nlohmann::json set_args(Set& st, const std::vector<Region>& regions,
                                 const nlohmann::json& args) {
    st.arg_slots.assign(args.size(), 0);
    st.args.assign(args.size(), nullptr);
    nlohmann::json described = args;
    for (size_t i = 0; i < args.size(); ++i) {
      const auto& a = args[i];
      st.args[i] = &st.arg_slots[i];
      if (a.contains("buffer")) {
        const size_t b = a.at("buffer");
        uint8_t* p = st.ptrs.at(b) + regions.at(b).canary;
        std::memcpy(&st.arg_slots[i], &p, sizeof p);
        described[i]["ptr"] = reinterpret_cast<uintptr_t>(p);
      } else if (a.contains("int")) {
        int v = a.at("int");
        std::memcpy(&st.arg_slots[i], &v, sizeof v);
      } else if (a.contains("float")) {
        float v = a.at("float");
        std::memcpy(&st.arg_slots[i], &v, sizeof v);
      } else {
        worker_fatal("unknown argument kind in call");
      }
    }
    return described;
  }

  // prepare: the sets (allocated; exported to the judge, or under a tool filled from shared
  // memory) and their arguments. Untimed.
  nlohmann::json prepare(const nlohmann::json& req) {
    regions.clear();
    std::vector<size_t> sizes;
    filled = req.value("fill", false);
    const int count = req.value("sets", 1);
    if (count < 1 || count > kMaxWindowCalls || (filled && count != 1))
      worker_fatal("bad number of sets");
    for (const auto& b : req.at("buffers")) {
      Region r{b.at("offset"), size_t(b.at("size")) + 2 * size_t(b.at("canary")), b.at("canary")};
      if (filled && r.offset + r.total > shm.size())
        worker_fatal("call buffer outside shared memory");
      regions.push_back(r);
      sizes.push_back(r.total);
    }
    allocate_sets(sizes, count, req.value("fresh", false));
    const nlohmann::json& all_args = req.at("set_args");
    if (!all_args.is_array() || all_args.size() != sets.size())
      worker_fatal("one argument list per set");
    nlohmann::json handles = nlohmann::json::array();
    for (size_t k = 0; k < sets.size(); ++k) {
      Set& st = sets[k];
      if (st.handles.size() != st.ptrs.size()) {
        st.handles.clear();
        for (uint8_t* p : st.ptrs) st.handles.push_back(handle_of(p));
      }
      for (const std::string& h : st.handles) handles.push_back(h);
      const nlohmann::json described = set_args(st, regions, all_args[k]);
      if (hooks.prepare_set) hooks.prepare_set(k, described);
    }
    if (filled) {
      for (size_t i = 0; i < regions.size(); ++i) {
        cudaError_t e = cudaMemcpy(sets[0].ptrs[i], shm.data() + regions[i].offset,
                                   regions[i].total, cudaMemcpyHostToDevice);
        if (e != cudaSuccess) cuda_failure("copy of an argument buffer to the device", e);
      }
    }
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) cuda_failure("before solve()", e);
    staged = true;
    ran = false;
    return {{"ok", true}, {"handles", handles}, {"sync", sync_handle}};
  }

  // A window (harness/call_window.h): the launch stream waits for the judge's go word `seq`,
  // then start event, `enqueue()` (the calls), stop event, done word. "queued" goes out once
  // enqueue() returned; after the judge's "settle" the worker measures what its context still
  // has running and answers.
  nlohmann::json window(uint32_t seq, const std::function<void()>& enqueue) {
    const StreamMemOps& ops = stream_memops();
    if (!ops.ok()) worker_fatal("the CUDA driver has no stream memory operations");
    const int threads_before = count_threads();
    if (ops.wait(CU_STREAM_LEGACY, reinterpret_cast<CUdeviceptr>(sync + kSyncGoOffset), seq,
                 CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS) {
      cuda_failure("the wait for the judge's window", cudaErrorLaunchFailure);
    }
    cudaEventRecord(start, cudaStreamLegacy);
    const auto t0 = std::chrono::steady_clock::now();
    enqueue();
    const auto t1 = std::chrono::steady_clock::now();
    cudaEventRecord(stop, cudaStreamLegacy);
    ops.write(CU_STREAM_LEGACY, reinterpret_cast<CUdeviceptr>(sync + kSyncDoneOffset), seq,
              CU_STREAM_WRITE_VALUE_DEFAULT);
    std::string err;
    if (!send_message(kWorkerSocketFd, {{"op", "queued"}}, &err)) _exit(2);
    cudaError_t e = cudaEventSynchronize(stop);
    if (e != cudaSuccess) cuda_failure("solve()", e);
    nlohmann::json settle;
    if (recv_message(kWorkerSocketFd, -1, &settle, &err, kChannelSpinMs) != RecvStatus::kOk ||
        settle.value("op", "") != "settle") {
      worker_fatal("expected the judge's settle");
    }
    const auto t2 = std::chrono::steady_clock::now();
    const double cpu2 = thread_cpu_ms();
    e = cudaDeviceSynchronize();
    const double cpu3 = thread_cpu_ms();
    const auto t3 = std::chrono::steady_clock::now();
    if (e != cudaSuccess) cuda_failure("solve() (work still running after it returned)", e);
    if ((e = cudaGetLastError()) != cudaSuccess) cuda_failure("solve() (a failed launch)", e);
    float event_ms = 0;
    cudaEventElapsedTime(&event_ms, start, stop);
    auto ms = [](std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
      return std::chrono::duration<double, std::milli>(b - a).count();
    };
    ran = true;
    return {{"ok", true},
            {"event_ms", event_ms},
            {"host_call_ms", ms(t0, t1)},
            {"busy_after_us", std::min(ms(t2, t3), cpu3 - cpu2) * 1000.0},
            {"busy_after_wall_us", ms(t2, t3) * 1000.0},
            {"threads_before", threads_before},
            {"threads_after", count_threads()}};
  }

  nlohmann::json go(const nlohmann::json& req) {
    if (!staged) worker_fatal("go without prepare");
    if (req.contains("seq")) {
      return window(req.at("seq").get<uint32_t>(), [this] {
        for (size_t k = 0; k < sets.size(); ++k) hooks.call(k, sets[k].args.data());
      });
    }
    // Under a tool: one call, no window.
    const int threads_before = count_threads();
    hooks.call(0, sets.at(0).args.data());
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e != cudaSuccess) cuda_failure("solve()", e);
    ran = true;
    return {{"ok", true},
            {"event_ms", 0.0},
            {"host_call_ms", 0.0},
            {"busy_after_us", 0.0},
            {"threads_before", threads_before},
            {"threads_after", count_threads()}};
  }

  nlohmann::json calibrate(const nlohmann::json& req) {
    const int kernels = req.value("kernels", 0);
    return window(req.at("seq").get<uint32_t>(), [kernels] {
      for (int i = 0; i < kernels; ++i) launch_null_kernel(cudaStreamLegacy);
    });
  }

  // collect: every buffer back into shared memory for the judge's checks (under a tool).
  nlohmann::json collect() {
    if (!ran) worker_fatal("collect without go");
    if (!filled) worker_fatal("collect of a call whose buffers the judge handles");
    for (size_t i = 0; i < regions.size(); ++i) {
      cudaError_t e = cudaMemcpy(shm.data() + regions[i].offset, sets[0].ptrs[i], regions[i].total,
                                 cudaMemcpyDeviceToHost);
      if (e != cudaSuccess) cuda_failure("copy of a buffer back from the device", e);
    }
    staged = ran = false;
    return {{"ok", true}};
  }
};

}  // namespace

bool parse_worker_args(int argc, char** argv, WorkerArgs* out) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--so") {
      out->solution = argv[i + 1];
    } else if (k == "--tmp") {
      out->private_dir = argv[i + 1];
    } else if (k == "--shm-bytes") {
      out->shm_bytes = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (k == "--device") {
      out->device = std::atoi(argv[i + 1]);
    } else if (k == "--exec") {
      out->executables.push_back(argv[i + 1]);
    }
  }
  if (out->solution.empty() || out->shm_bytes == 0) {
    std::fprintf(stderr, "fp4arena's worker is started by run_challenge, not by hand\n");
    return false;
  }
  return true;
}

std::string restrict_worker_files(const WorkerArgs& a) {
  // Landlock first, while this is the only thread: it binds only the threads started after
  // it, and CUDA starts helper threads (host-function callbacks run on one) that user code
  // could reach. CUDA itself then starts under it: it writes to /dev/nvidia*, to /proc (its
  // threads' names) and to its JIT cache, which the judge points into the private folder
  // (all three allowed). PR_SET_NO_NEW_PRIVS is set here too, so CUDA could not create
  // missing device files through the set-uid nvidia-modprobe; the judge has initialised CUDA
  // before, so they exist.
  std::string files = "off", err;
  if (std::getenv("FP4ARENA_NO_SANDBOX")) return files;
  if (!restrict_file_writes(a.private_dir, &files, &err, a.executables))
    worker_fatal("cannot restrict file writes: " + err);
  return files;
}

int serve_worker(const WorkerArgs& a, const std::string& files, SolutionHooks hooks) {
  const bool sandboxed = !std::getenv("FP4ARENA_NO_SANDBOX");
  std::string err, sandbox = "off (under a profiling or checking tool)";
  Worker w;
  w.hooks = std::move(hooks);
  w.setup(a.shm_bytes, a.device);
  // seccomp after CUDA is up and before any user code is loaded; it covers every thread.
  if (sandboxed) {
    const char* filter = std::getenv("FP4ARENA_SECCOMP");
    const SeccompMode mode = filter && std::string(filter) == "denylist" ? SeccompMode::kDenylist
                                                                         : SeccompMode::kAllowlist;
    // Programs may start only where Landlock holds them to the listed ones.
    const bool programs = files.find("programs run only from") != std::string::npos;
    if (!apply_worker_sandbox(&sandbox, &err, mode, programs))
      worker_fatal("cannot install the sandbox: " + err);
    sandbox += "; " + files;
  }
  if (!send_message(
          kWorkerSocketFd,
          {{"op", "hello"}, {"pid", getpid()}, {"pinned", w.pinned}, {"sandbox", sandbox}}, &err)) {
    return 2;
  }
  for (;;) {
    nlohmann::json req;
    RecvStatus st = recv_message(kWorkerSocketFd, -1, &req, &err, kChannelSpinMs);
    if (st != RecvStatus::kOk) return st == RecvStatus::kClosed ? 0 : 2;
    std::string op = req.value("op", "");
    if (op == "quit") return 0;
    nlohmann::json reply;
    try {
      if (op == "load") {
        w.load(a.solution);
        reply = {{"ok", true}};
      } else if (op == "calibrate") {
        reply = w.calibrate(req);
      } else if (op == "prepare") {
        reply = w.prepare(req);
      } else if (op == "go") {
        reply = w.go(req);
      } else if (op == "collect") {
        reply = w.collect();
      } else {
        worker_fatal("unknown request '" + op + "'");
      }
    } catch (const nlohmann::json::exception& e) {
      worker_fatal(std::string("malformed call: ") + e.what());
    }
    if (!send_message(kWorkerSocketFd, reply, &err)) return 2;
  }
}

}  // namespace fp4arena
