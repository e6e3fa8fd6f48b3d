// fp4arena_worker: the only process that loads user code. It receives one window of calls at
// a time from the judge, allocates the window's argument-buffer sets (canaries included) on
// the device and hands the judge a CUDA IPC handle for each buffer, and on "go" queues
// solve() once per set behind a wait for the judge's go word. The judge fills, delivers, times
// and reads the buffers itself (harness/call_window.h). The worker never sees an expected
// output, nor a call's inputs before the judge's window delivers them; nothing it reports is
// part of a score.
//
// Usage (started by the judge only): see WorkerArgs in worker_serve.h, which holds the
// protocol's side of the worker shared with the Python worker; this file is the dlopen of a
// compiled solution.
//
// Requests: "prepare" (buffers and arguments for `sets` calls; reply: their handles and the
// sync buffer's), "calibrate" (a window of `kernels` null kernels of the worker's own: the
// judge calibrates its clock on these before any user code is loaded), "load" (dlopen the
// solution), "go" (a window of solve() calls), "quit". "calibrate" and "go" with a "seq" answer
// twice: {"op": "queued"} once the calls are queued behind the go word, then, after the
// judge's "settle" (its window is over), the final reply with the worker's own diagnostics.
//
// Under a tool (compute-sanitizer, ncu) there is no window: prepare has "fill": true and one
// set, the worker copies the buffers from shared memory, "go" has no "seq" and runs solve()
// once, and "collect" copies every buffer back.
#include <dlfcn.h>

#include <string>

#include "harness/worker_serve.h"

int main(int argc, char** argv) {
  using namespace fp4arena;
  WorkerArgs args;
  if (!parse_worker_args(argc, argv, &args)) return 2;
  // The sandbox (harness/sandbox.h). Under a tool (compute-sanitizer, ncu:
  // FP4ARENA_NO_SANDBOX set by the judge) it stays off.
  const std::string files = restrict_worker_files(args);
  using CallFn = void (*)(void* const*);
  CallFn call = nullptr;
  SolutionHooks hooks;
  hooks.load = [&call](const std::string& so_path) {
    void* handle = dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) worker_fatal(std::string("cannot load the solution: ") + dlerror());
    call = reinterpret_cast<CallFn>(dlsym(handle, "fp4arena_call"));
    if (!call) worker_fatal("the solution object has no fp4arena_call (not built by fp4arena?)");
  };
  hooks.call = [&call](size_t, void* const* a) { call(a); };
  return serve_worker(args, files, std::move(hooks));
}
