// libfp4arena_pyworker.so: the Python worker's side of the judge's protocol, the CUDA
// worker's own (harness/worker_serve.h), for python_worker.py to drive through ctypes.
// Python calls fp4arena_py_begin() first, while it has one thread (Landlock binds only the
// threads started after it), then imports torch (and triton), then fp4arena_py_serve() with
// its three callbacks; serve returns when the judge says quit. Only these two symbols are
// exported (CMakeLists.txt): the CUDA runtime inside is static and hidden, as in the CUDA
// worker.
#include <string>
#include <utility>

#include "harness/worker_serve.h"

namespace {

fp4arena::WorkerArgs g_args;
std::string g_files;
bool g_begun = false;

}  // namespace

extern "C" {

/// Imports the module at `path` and finds its solve(); 0 when it did.
typedef int (*Fp4arenaPyLoad)(const char* path);
/// Set `set`'s arguments (worker_serve.h, SolutionHooks::prepare_set) as JSON text; 0 when
/// Python made its tensors.
typedef int (*Fp4arenaPyPrepare)(int set, const char* args_json);
/// One call of solve() on set `set`. Python ends the process itself when solve() raises.
typedef void (*Fp4arenaPyCall)(int set);

__attribute__((visibility("default"))) int fp4arena_py_begin(int argc, char** argv) {
  if (!fp4arena::parse_worker_args(argc, argv, &g_args)) return 2;
  g_files = fp4arena::restrict_worker_files(g_args);
  g_begun = true;
  return 0;
}

__attribute__((visibility("default"))) int fp4arena_py_serve(Fp4arenaPyLoad load,
                                                             Fp4arenaPyPrepare prepare,
                                                             Fp4arenaPyCall call) {
  if (!g_begun || !load || !prepare || !call) return 2;
  fp4arena::SolutionHooks hooks;
  hooks.load = [load](const std::string& path) {
    if (load(path.c_str()) != 0) {
      fp4arena::worker_fatal("cannot load the solution " + path +
                             " (Python's traceback is in the solution's output)");
    }
  };
  hooks.prepare_set = [prepare](size_t set, const nlohmann::json& args) {
    if (prepare(int(set), args.dump().c_str()) != 0) {
      fp4arena::worker_fatal(
          "cannot wrap the call's buffers as torch tensors (Python's "
          "traceback is in the solution's output)");
    }
  };
  hooks.call = [call](size_t set, void* const*) { call(int(set)); };
  return fp4arena::serve_worker(g_args, g_files, std::move(hooks));
}

}  // extern "C"
