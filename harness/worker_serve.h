// The worker's side of the judge's protocol (the requests below), shared by the two kinds of
// worker: the CUDA worker (fp4arena_worker, worker_main.cc), which dlopens a compiled
// solution, and the Python worker (libfp4arena_pyworker.so, python_worker_lib.cc, hosted by
// python_worker.py), whose loads and calls go through Python. Neither is part of the judge.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fp4arena {

/// The worker's command line (given by the judge only):
///   --so FILE --shm-bytes N --device D [--tmp DIR] [--exec PATH]...   (fd 3: socket, fd 4: memfd)
/// DIR: the worker's private folder, made and removed by the judge; the only place the
/// sandboxed worker may create or change files. --exec (the Python worker of a Triton
/// solution only): a program, or a folder of programs, the worker may run (its compilers);
/// without one it may run none.
struct WorkerArgs {
  std::string solution;  ///< --so: the compiled object, or the Python file
  std::string private_dir;
  std::size_t shm_bytes = 0;
  int device = 0;
  std::vector<std::string> executables;  ///< --exec, in order
};
/// False (with a line on stderr) when --so or --shm-bytes is missing.
bool parse_worker_args(int argc, char** argv, WorkerArgs* out);

/// How the worker loads and calls one kind of solution.
struct SolutionHooks {
  /// Loads the solution: its constructors (a module's top-level code) run here, in the
  /// sandbox, after the judge calibrated its clock. Ends the worker with worker_fatal() on
  /// failure.
  std::function<void(const std::string& path)> load;
  /// Optional: after each prepare, every set's arguments as laid out (a JSON array in the
  /// parameters' order: {"buffer", "ptr", "shape", "dtype"}, {"int"}, {"float"}). Untimed.
  std::function<void(std::size_t set, const nlohmann::json& args)> prepare_set;
  /// One call of solve() on set `set` (`args`: one pointer per parameter to its value).
  std::function<void(std::size_t set, void* const* args)> call;
};

/// The sandbox's first step (Landlock, harness/sandbox.h) unless FP4ARENA_NO_SANDBOX is set:
/// call it while the process has one thread. Returns what it enforces ("off" when not
/// sandboxed); ends the worker on failure.
std::string restrict_worker_files(const WorkerArgs& a);

/// CUDA set-up, the seccomp filter (unless FP4ARENA_NO_SANDBOX), "hello", then the judge's
/// requests until "quit" or the channel closes. Returns the worker's exit status.
int serve_worker(const WorkerArgs& a, const std::string& files, SolutionHooks hooks);

/// Tells the judge why the worker cannot go on, and exits.
[[noreturn]] void worker_fatal(const std::string& what);

}  // namespace fp4arena
