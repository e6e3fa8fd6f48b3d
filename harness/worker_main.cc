// fp4arena_worker: the only process that loads user code. It receives one call at a time
// from the judge, allocates the call's buffers (canaries included) on the device and hands
// the judge a CUDA IPC handle for each, runs the pre-call traffic and L2 flush, and on "go"
// runs solve() between two events on the launch stream. The judge fills, delivers and reads
// the buffers itself (harness/call_window.h). It never sees an expected output, nor a
// call's inputs before the judge's timed window starts.
//
// Usage (started by the judge only):
//   fp4arena_worker --so FILE --shm-bytes N --device D [--tmp DIR]   (fd 3: socket, fd 4: memfd)
// DIR: the worker's private folder, made and removed by the judge; the only place the
// sandboxed worker may create or change files.
//
// Requests, one reply each: "empty" (a timed call of nothing: the judge calibrates the
// overhead of its own clock on these, each after a "prepare" with no buffers, before any
// user code is loaded), "load" (dlopen the solution), then per call "prepare" (buffers,
// arguments, pre-call traffic and L2 flush), "go" (the timed part), and "quit".
//
// Normally the judge handles the buffers itself (harness/call_window.h): prepare has
// "export": true and "fill": false, allocates the buffers without copying anything into them
// and answers with a CUDA IPC handle per buffer; the judge fills them, delivers the inputs
// inside its timed window and reads everything back. Under a tool (compute-sanitizer, ncu)
// the worker copies the buffers from shared memory at prepare and back at "collect".
#include <cuda_runtime.h>
#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "harness/ipc.h"
#include "harness/pre_call.h"
#include "harness/sandbox.h"
#include "harness/stream_memops.h"

namespace fp4arena {
namespace {

using CallFn = void (*)(void* const*);

int count_threads() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

[[noreturn]] void fatal(const std::string& what) {
  std::string ignored;
  send_message(kWorkerSocketFd, {{"op", "fatal"}, {"error", what}}, &ignored);
  std::fprintf(stderr, "fp4arena_worker: %s\n", what.c_str());
  _exit(2);
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
  CallFn call = nullptr;
  PreCall pre_call;  // warm-up + L2 flush before timed calls (harness/pre_call.h)
  int calls = 0;
  bool pinned = false;
  // Argument buffers come either from a ring of kRingSlots sets allocated once per shape
  // and used in turn (request "slot" >= 0), or fresh for every call (slot -1), in which
  // case the previous call's stay allocated until this call's exist. Either way no call
  // gets the addresses of the call before it.
  static constexpr int kRingSlots = kRingDepth;
  struct Slot {
    std::vector<size_t> sizes;
    std::vector<uint8_t*> ptrs;
    std::vector<std::string> handles;  // CUDA IPC handles of ptrs, made when first exported
  };
  Slot ring[kRingSlots];
  std::vector<uint8_t*> previous;
  // The sync buffer of the judge's window (harness/stream_memops.h): allocated once, its
  // handle sent with every exported prepare.
  uint8_t* sync = nullptr;
  std::string sync_handle;

  // CUDA context, pinned shared memory, pre-call buffers and the runtime's lazy machinery:
  // everything before user code is loaded (the judge calibrates its clock on this).
  void setup(size_t shm_bytes, int device) {
    std::string err;
    if (!shm.attach(kWorkerShmFd, shm_bytes, &err)) fatal(err);
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaFree(nullptr);  // create the context now, not in solve()
    if (e != cudaSuccess) fatal(std::string("cannot open CUDA device: ") + cudaGetErrorString(e));
    // Pinned host memory makes the copies fast; pageable still works if pinning fails.
    pinned = cudaHostRegister(shm.data(), shm.size(), cudaHostRegisterDefault) == cudaSuccess;
    cudaGetLastError();
    if (!pre_call.init(1.0, &err)) fatal(err);
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
    PreCall::Timed t;
    const char* where = "";
    if (pre_call.timed_call([] {}, false, kCountAfterUs, &t, &where) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess) {
      fatal("CUDA warm-up failed");
    }
    if (cudaMalloc(reinterpret_cast<void**>(&sync), kSyncBytes) != cudaSuccess ||
        cudaMemset(sync, 0, kSyncBytes) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
      fatal("cannot allocate the sync buffer");
    }
  }

  // Loads the solution: its constructors run here, after calibration.
  void load(const std::string& so_path) {
    void* handle = dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) fatal(std::string("cannot load the solution: ") + dlerror());
    call = reinterpret_cast<CallFn>(dlsym(handle, "fp4arena_call"));
    if (!call) fatal("the solution object has no fp4arena_call (not built by fp4arena?)");
  }

  // The staged call between prepare, go and collect.
  struct Region {
    size_t offset, total, canary;
    uint8_t* dev;
  };
  std::vector<Region> regions;
  std::vector<uint64_t> arg_slots;
  std::vector<void*> args;
  bool staged = false, timed = false, ran = false, filled = true;

  // prepare: the buffers (allocated; exported to the judge, or under a tool filled from
  // shared memory), arguments, and (timed calls) the pre-call traffic and L2 flush. Untimed
  // by the judge.
  nlohmann::json prepare(const nlohmann::json& req) {
    regions.clear();
    std::vector<size_t> sizes;
    // Without "fill" the judge handles the buffers itself and shared memory is not used.
    filled = req.value("fill", true);
    for (const auto& b : req.at("buffers")) {
      Region r{b.at("offset"), size_t(b.at("size")) + 2 * size_t(b.at("canary")), b.at("canary"),
               nullptr};
      if (filled && r.offset + r.total > shm.size()) fatal("call buffer outside shared memory");
      regions.push_back(r);
      sizes.push_back(r.total);
    }
    int slot = req.value("slot", -1);
    if (slot >= kRingSlots) fatal("ring slot out of range");
    if (slot >= 0 && ring[slot].sizes != sizes) {
      for (uint8_t* p : ring[slot].ptrs) cudaFree(p);
      ring[slot].ptrs.clear();
      ring[slot].sizes.clear();
      ring[slot].handles.clear();
      for (size_t bytes : sizes) {
        uint8_t* p = nullptr;
        cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&p), bytes);
        if (e != cudaSuccess) cuda_failure("cudaMalloc of an argument buffer", e);
        ring[slot].ptrs.push_back(p);
      }
      ring[slot].sizes = sizes;
    }
    const bool export_handles = req.value("export", false);
    if (slot >= 0 && export_handles && ring[slot].handles.size() != ring[slot].ptrs.size()) {
      ring[slot].handles.clear();
      for (uint8_t* p : ring[slot].ptrs) ring[slot].handles.push_back(handle_of(p));
    }
    std::vector<uint8_t*> fresh;
    nlohmann::json handles = nlohmann::json::array();
    for (size_t i = 0; i < regions.size(); ++i) {
      Region& r = regions[i];
      if (slot >= 0) {
        r.dev = ring[slot].ptrs[i];
        if (export_handles) handles.push_back(ring[slot].handles[i]);
      } else {
        cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&r.dev), r.total);
        if (e != cudaSuccess) cuda_failure("cudaMalloc of an argument buffer", e);
        fresh.push_back(r.dev);
        if (export_handles) handles.push_back(handle_of(r.dev));
      }
      if (!filled) continue;
      cudaError_t e = cudaMemcpy(r.dev, shm.data() + r.offset, r.total, cudaMemcpyHostToDevice);
      if (e != cudaSuccess) cuda_failure("copy of an argument buffer to the device", e);
    }
    for (uint8_t* p : previous) cudaFree(p);
    previous = fresh;
    // One value slot per parameter; args[i] points at it.
    arg_slots.assign(req.at("args").size(), 0);
    args.assign(arg_slots.size(), nullptr);
    for (size_t i = 0; i < arg_slots.size(); ++i) {
      const auto& a = req.at("args")[i];
      args[i] = &arg_slots[i];
      if (a.contains("buffer")) {
        uint8_t* p = regions.at(a.at("buffer")).dev + regions.at(a.at("buffer")).canary;
        std::memcpy(&arg_slots[i], &p, sizeof p);
      } else if (a.contains("int")) {
        int v = a.at("int");
        std::memcpy(&arg_slots[i], &v, sizeof v);
      } else if (a.contains("float")) {
        float v = a.at("float");
        std::memcpy(&arg_slots[i], &v, sizeof v);
      } else {
        fatal("unknown argument kind in call");
      }
    }
    timed = req.value("flush_l2", false);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) cuda_failure("before solve()", e);
    if (timed) {
      e = pre_call.prepare(++calls);
      if (e != cudaSuccess) cuda_failure("L2 flush", e);
    }
    staged = true;
    ran = false;
    nlohmann::json reply = {{"ok", true}};
    if (export_handles) {
      reply["handles"] = handles;
      if (sync_handle.empty()) sync_handle = handle_of(sync);
      reply["sync"] = sync_handle;
    }
    return reply;
  }

  // go: the timed part, and the only one the judge's clock bounds: blocking kernel, start
  // event, solve() (or nothing, for calibration), stop event, release, synchronise. With a
  // "seq" (the judge's window), the launch stream first waits for the judge's go word in the
  // sync buffer and writes its done word right after the stop event, so that the judge's own
  // events bracket this call's device work (harness/call_window.h).
  nlohmann::json go(bool empty, const nlohmann::json& req) {
    if (!empty && !staged) fatal("go without prepare");
    const auto go_start = std::chrono::steady_clock::now();
    int threads_before = count_threads();
    std::function<void()> signal_done;
    if (req.contains("seq")) {
      const cuuint32_t seq = req.at("seq").get<uint32_t>();
      const StreamMemOps& ops = stream_memops();
      if (!ops.ok()) fatal("the CUDA driver has no stream memory operations");
      if (ops.wait(CU_STREAM_LEGACY, reinterpret_cast<CUdeviceptr>(sync + kSyncGoOffset), seq,
                   CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS) {
        cuda_failure("the wait for the judge's window", cudaErrorLaunchFailure);
      }
      signal_done = [&ops, this, seq] {
        ops.write(CU_STREAM_LEGACY, reinterpret_cast<CUdeviceptr>(sync + kSyncDoneOffset), seq,
                  CU_STREAM_WRITE_VALUE_DEFAULT);
      };
    }
    PreCall::Timed t;
    const char* where = "";
    cudaError_t e = pre_call.timed_call(
        [&] {
          if (!empty) call(args.data());
        },
        empty || timed, kCountAfterUs, &t, &where, signal_done);
    if (e != cudaSuccess) {
      std::string w = where;
      if (w.rfind("the call", 0) == 0) w = "solve()" + w.substr(8);
      cuda_failure(w.c_str(), e);
    }
    int threads_after = count_threads();
    ran = ran || !empty;
    const double go_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - go_start)
            .count();
    return {{"ok", true},
            {"worker_go_ms", go_ms},
            {"event_ms", t.event_ms},
            {"event_only_ms", t.event_only_ms},
            {"host_call_ms", t.host_call_ms},
            {"busy_after_us", t.busy_after_us},
            {"threads_before", threads_before},
            {"threads_after", threads_after},
            {"hold_timed_out", t.hold_timed_out}};
  }

  // collect: every buffer back into shared memory for the judge's checks.
  nlohmann::json collect() {
    if (!ran) fatal("collect without go");
    if (!filled) fatal("collect of a call whose buffers the judge handles");
    for (Region& r : regions) {
      cudaError_t e = cudaMemcpy(shm.data() + r.offset, r.dev, r.total, cudaMemcpyDeviceToHost);
      if (e != cudaSuccess) cuda_failure("copy of a buffer back from the device", e);
    }
    staged = ran = false;
    return {{"ok", true}};
  }
};

}  // namespace
}  // namespace fp4arena

int main(int argc, char** argv) {
  using namespace fp4arena;
  std::string so, private_dir;
  size_t shm_bytes = 0;
  int device = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--so") {
      so = argv[i + 1];
    } else if (k == "--tmp") {
      private_dir = argv[i + 1];
    } else if (k == "--shm-bytes") {
      shm_bytes = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (k == "--device") {
      device = std::atoi(argv[i + 1]);
    }
  }
  if (so.empty() || shm_bytes == 0) {
    std::fprintf(stderr, "fp4arena_worker is started by run_challenge, not by hand\n");
    return 2;
  }
  // The sandbox (harness/sandbox.h). Under a tool (compute-sanitizer, ncu:
  // FP4ARENA_NO_SANDBOX set by the judge) it stays off.
  const bool sandboxed = !std::getenv("FP4ARENA_NO_SANDBOX");
  std::string err, files = "off", sandbox = "off (under a profiling or checking tool)";
  // Landlock first, while this is the only thread: it binds only the threads started after
  // it, and CUDA starts helper threads (host-function callbacks run on one) that user code
  // could reach. CUDA itself then starts under it: it writes to /dev/nvidia*, to /proc (its
  // threads' names) and to its JIT cache, which the judge points into the private folder
  // (all three allowed). PR_SET_NO_NEW_PRIVS is set here too, so CUDA could not create
  // missing device files through the set-uid nvidia-modprobe; the judge has initialised CUDA
  // before, so they exist.
  if (sandboxed && !restrict_file_writes(private_dir, &files, &err)) {
    fatal("cannot restrict file writes: " + err);
  }
  Worker w;
  w.setup(shm_bytes, device);
  // seccomp after CUDA is up and before any user code is loaded; it covers every thread.
  if (sandboxed) {
    if (!apply_worker_sandbox(&sandbox, &err)) fatal("cannot install the sandbox: " + err);
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
        w.load(so);
        reply = {{"ok", true}};
      } else if (op == "empty") {
        reply = w.go(true, req);
      } else if (op == "prepare") {
        reply = w.prepare(req);
      } else if (op == "go") {
        reply = w.go(false, req);
      } else if (op == "collect") {
        reply = w.collect();
      } else {
        fatal("unknown request '" + op + "'");
      }
    } catch (const nlohmann::json::exception& e) {
      fatal(std::string("malformed call: ") + e.what());
    }
    if (!send_message(kWorkerSocketFd, reply, &err)) return 2;
  }
}
