// The judge: compile a solution, run it case by case in a worker, validate every output,
// time the benchmarks, and produce the verdicts, the human summary and the JSON record.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/compile.h"

namespace fp4arena {

/// Process exit codes of run_challenge (documented in README.md).
enum class ExitCode : int {
  kPassed = 0,        ///< every case passed (check: compiled, signature matches)
  kFailed = 1,        ///< a case got a wrong answer, an integrity verdict, or an invalid score
  kUsage = 2,         ///< bad command line, unknown challenge, malformed spec.json
  kCompileError = 3,  ///< the solution did not compile or its signature is wrong
  kRuntimeError = 4,  ///< a case crashed, raised a CUDA error, timed out or exited early
  kNoGpu = 5,         ///< no CUDA GPU: the solution was compiled and checked only
  kInternal = 6,      ///< the judge itself failed (nvcc missing, oracle CUDA error, ...)
};

struct JudgeOptions {
  std::string challenge_dir;
  std::string solution_path;
  std::string action = "run";  ///< "check", "run" or "submit"
  int device = 0;
  std::string arch;                ///< empty: the device's own (sm_90a without a GPU)
  std::vector<std::string> cases;  ///< only these cases (empty: all)
  std::string output_path;         ///< submit: record path (empty: under results_dir)
  std::string results_dir = "results";
  std::string author;               ///< empty: a "// author: NAME" line of the solution
  bool yardstick = true;            ///< submit: also time the vendor-library yardstick
  bool progress = true;             ///< live progress line on the log stream
  std::string cache_dir;            ///< compile cache (empty: default)
  std::string worker_path;          ///< empty: fp4arena_worker next to the running program
  double call_timeout_seconds = 0;  ///< > 0 overrides the spec's per-call limit
  /// How the worker allocates argument buffers: "ring" (3 sets allocated once per shape and
  /// used in turn) or "fresh" (new allocations for every call).
  std::string buffers = "ring";
};

struct JudgeOutcome {
  ExitCode code = ExitCode::kInternal;
  nlohmann::json record;    ///< the submit record (run: the same shape, not written)
  std::string record_path;  ///< submit: where the record was written
};

/// Runs one action. The human report goes to `log`; nothing is printed on stdout.
JudgeOutcome judge(const JudgeOptions& opts, std::ostream& log);

}  // namespace fp4arena
