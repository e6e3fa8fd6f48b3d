// The judge: compile a solution, run it case by case in a worker, validate every output,
// time the benchmarks, and produce the verdicts, the human summary and the JSON record.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/compile.h"
#include "harness/verdict.h"

namespace fp4arena {

/// Process exit codes of run_challenge (documented in README.md).
enum class ExitCode : int {
  kPassed = 0,        ///< every case passed (check: compiled, signature matches)
  kFailed = 1,        ///< a case got a wrong answer, an integrity verdict, or an invalid score
  kUsage = 2,         ///< bad command line, unknown challenge, malformed spec.json
  kCompileError = 3,  ///< the solution did not compile or its signature is wrong
  kRuntimeError = 4,  ///< a case crashed, raised a CUDA error, timed out or exited early
  kNoGpu = 5,         ///< no CUDA GPU: the solution was compiled and checked only
  kInternal = 6,      ///< the judge itself failed (nvcc missing, oracle CUDA error, shared GPU)
};

/// A failure that ends a run before its cases have verdicts: the exit code that is its kind
/// and one message that names the file, field or option at fault and what was expected. The
/// judge's steps return it (or report it through JudgeOutcome::code) and print it once, as
/// "fp4arena: MESSAGE". A case's own failure is a Verdict (verdict.h), never a JudgeError.
struct JudgeError {
  ExitCode code = ExitCode::kInternal;
  std::string message;
};

/// What one run_challenge invocation does.
enum class Action { kCheck, kTest, kRun, kSubmit, kSanitize, kProfile, kDump, kSweep };
/// "check", "test", "run", "submit", "sanitize", "profile", "dump", "sweep"
const char* action_name(Action a);
bool parse_action(const std::string& name, Action* out);

/// How the worker allocates argument buffers: a ring of kRingDepth sets allocated once per
/// shape and used in turn, or fresh allocations for every call.
enum class BufferMode { kRing, kFresh };
const char* buffer_mode_name(BufferMode m);  ///< "ring", "fresh"

struct JudgeOptions {
  std::string challenge_dir;
  std::string solution_path;  ///< not needed for dump
  Action action = Action::kRun;
  int device = 0;
  std::string arch;                ///< empty: the device's own (sm_90a without a GPU)
  std::vector<std::string> cases;  ///< only these cases (empty: all)
  bool has_seed = false;           ///< --seed: replay the selected case(s) with this seed
  uint64_t seed = 0;
  std::string output_path;  ///< submit: record path (empty: under results_dir)
  std::string results_dir = "results";
  std::string dump_dir;     ///< dump: output folder (empty: dump/<challenge>/<case>)
  std::string sweep_dir;    ///< sweep: output folder (empty: sweep/<challenge>)
  std::string profile_dir;  ///< profile: where ncu's .ncu-rep goes (empty: not kept)
  std::string shapes_path;  ///< sweep: --shapes FILE (empty: the spec's sweep list,
                            ///< else its benchmarks)
  std::string author;       ///< empty: a "// author: NAME" line of the solution
  std::string language;     ///< "cuda", "triton", "pytorch"; empty: from the file name
  bool yardstick = true;    ///< submit, sweep: also time the yardstick
  bool progress = true;     ///< live progress line on the log stream
  /// How long a benchmark window's back-to-back calls should last, in ms (at most 512 calls):
  /// long enough that the calibrated switches and the copies' slack are small beside them.
  /// Library callers only (the stream floor's window-length study); the command line keeps 1.
  double window_target_ms = 1.0;
  std::string cache_dir;                  ///< compile cache (empty: default)
  std::vector<std::string> include_dirs;  ///< --include-dir: extra -I folders for nvcc
  std::vector<std::string> nvcc_flags;    ///< --nvcc-flag: allow-listed extra nvcc flags
  std::string worker_path;                ///< empty: fp4arena_worker next to the running program
  double call_timeout_seconds = 0;        ///< > 0 overrides the spec's per-call limit
  int max_samples = 0;  ///< run, sweep: > 0 caps the timed samples per benchmark (not submit)
  BufferMode buffers = BufferMode::kRing;
  bool seccomp_allowlist = true;  ///< the worker's filter: the allowlist (else the denylist)
  /// How windows model their copies and poison their outputs (verdict.h). A method other
  /// than kJudgeWindowMethod is for library callers only (tests/bench compare the two); submit
  /// and sweep refuse it.
  WindowMethod window_method = kJudgeWindowMethod;
};

struct JudgeOutcome {
  ExitCode code = ExitCode::kInternal;
  nlohmann::json record;    ///< the submit record (run: the same shape, not written; sweep:
                            ///< sweep.json's content)
  std::string record_path;  ///< submit: where the record was written; sweep: sweep.json
  /// run, submit: per benchmark, the seeds of each timed sample's calls in call order, told
  /// only to a program that calls judge() itself (the timing check replays the same inputs in
  /// process); never in a record, and drawn only as each window starts, so no worker knew them.
  std::map<std::string, std::vector<std::vector<uint64_t>>> sample_seeds;
};

/// Runs one action. The human report goes to `log`; nothing is printed on stdout.
JudgeOutcome judge(const JudgeOptions& opts, std::ostream& log);

}  // namespace fp4arena
