// The judge's side of a worker: start it in its own process group, send calls with a
// time limit, and clean up everything it started.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/ipc.h"

namespace fp4arena {

struct WorkerOptions {
  std::string worker_path;  ///< the fp4arena_worker executable
  std::string so_path;      ///< the compiled solution
  int device = 0;
  size_t shm_bytes = 0;
  double start_timeout_seconds = 120;
  /// A tool the worker runs under (compute-sanitizer, ncu ...): argv prefix, searched in PATH.
  std::vector<std::string> wrapper;
  /// How long a worker may take to exit cleanly when asked (tools write reports at exit).
  double exit_grace_seconds = 2;
  /// Where the judge is root, run the worker as a user of its own (WorkerIdentity); when
  /// false, `own_user_off` says why (it goes into sandbox()).
  bool own_user = true;
  std::string own_user_off;
  /// The worker's seccomp filter: the allowlist instead of the denylist (harness/sandbox.h).
  bool seccomp_allowlist = true;
  /// A Python worker: the interpreter's argv ({"python3", "-I", "-B"}) and its host script,
  /// which runs with worker_path (the worker library) as its first argument; the script is
  /// staged into the private folder as the worker is. Empty: worker_path is the program.
  std::vector<std::string> interpreter;
  std::string host_script;
  /// Arguments after the worker's own (the Python worker's --language).
  std::vector<std::string> extra_args;
};

/// How one call ended, seen from the judge.
enum class CallOutcome { kOk, kCudaError, kCrashed, kEarlyExit, kTimeout, kWorkerError };

struct CallReply {
  CallOutcome outcome = CallOutcome::kWorkerError;
  std::string detail;   ///< the cause in words (signal, exit status, CUDA error, ...)
  nlohmann::json data;  ///< the worker's reply when outcome is kOk
};

// The worker's own user, where the judge runs as root: a uid and gid of no account (one per
// judge process, so that workers of judges running side by side differ too), with no
// capability left and none to regain. `why_not` says why it is not used.
struct WorkerIdentity {
  bool use = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string why_not;
};
class WorkerProcess {
 public:
  /// Starts a worker and waits for its hello. nullptr + *err when it cannot start (the
  /// message carries the worker's own fatal error, e.g. a failed dlopen). Where the judge is
  /// root, the worker runs as a user of its own (no capabilities); if it cannot start so (no
  /// user code has run by its hello), it is started once more as the judge's user, and
  /// sandbox() says why.
  static std::unique_ptr<WorkerProcess> start(const WorkerOptions& opts, std::string* err);
  ~WorkerProcess();

  uint8_t* shm() const { return shm_.data(); }
  size_t shm_size() const { return shm_.size(); }
  pid_t pid() const { return pid_; }
  /// What the worker's sandbox enforces, as it said before any user code was loaded.
  const std::string& sandbox() const { return sandbox_; }
  /// Whether the worker runs as a user of its own (WorkerIdentity).
  bool own_user() const { return own_user_; }
  /// The only folder where the sandboxed worker may create or change files (its TMPDIR);
  /// removed with the worker. Empty under a tool (no sandbox).
  const std::string& private_dir() const { return private_dir_; }
  bool alive() const { return pid_ > 0; }

  /// Sends one call request and waits up to `timeout_seconds` for its reply. On any outcome
  /// but kOk the worker is gone afterwards (killed and reaped) and must be restarted.
  CallReply call(const nlohmann::json& request, double timeout_seconds);

  /// The two halves of call(). send() is false when the request could not be written (the
  /// worker is gone; *failed says how it ended). receive() waits up to `timeout_seconds` for
  /// one message: a reply (a boolean "ok"), or {"op": "queued"} (kOk, the message in data).
  /// With `kill_on_timeout` false a timeout leaves the worker running (kTimeout, nothing
  /// received); every other failure kills it.
  bool send(const nlohmann::json& request, CallReply* failed);
  CallReply receive(double timeout_seconds, bool kill_on_timeout = true);

  /// Kills the worker's whole process group and every other process it left behind, and
  /// removes its private folder.
  void kill_all();

 private:
  WorkerProcess() = default;

  static std::unique_ptr<WorkerProcess> start_as(const WorkerOptions& opts,
                                                 const WorkerIdentity& id, std::string* err);
  // After the fork: waits for the worker's hello; the worker, or nullptr + *err.
  bool make_private_dir_for(const WorkerOptions& opts, const WorkerIdentity& id,
                            std::string* worker_path, std::string* so_path,
                            std::string* host_script, std::string* err);
  static std::unique_ptr<WorkerProcess> await_hello(std::unique_ptr<WorkerProcess> w,
                                                    const WorkerOptions& opts,
                                                    const WorkerIdentity& id, std::string* err);
  // Waits for the worker to exit after it closed its channel; describes how it ended.
  CallReply reap_after_close();

  SharedRegion shm_;
  double exit_grace_seconds_ = 2;
  int sock_ = -1;
  pid_t pid_ = -1;
  std::string sandbox_;
  std::string private_dir_;
  bool own_user_ = false;
  // The worker's stdout and stderr (one pipe, never the judge's terminal), relayed to the
  // judge's stderr line by line with the prefix kSolutionOutputPrefix, at most
  // kSolutionOutputBytes; joined once the worker is gone.
  std::thread relay_;
};

/// Where the judge runs as root, each worker runs as uid = gid = kWorkerIdBase + (the judge's
/// pid mod kWorkerIdSpan): an id of no account, different for judges side by side.
constexpr uint32_t kWorkerIdBase = 2000000000u;
constexpr uint32_t kWorkerIdSpan = 1000000u;

/// How long the judge waits for room on the channel to send a request before it kills the
/// worker (one that is stopped, or does not read).
constexpr int kSendTimeoutMs = 10000;

/// What starts each line the worker (the solution) printed, as the judge shows it.
constexpr const char* kSolutionOutputPrefix = "solution| ";
/// How much of the worker's output the judge shows; the rest is counted, not shown.
constexpr size_t kSolutionOutputBytes = size_t(1) << 20;

/// Kills and reaps every child process of the judge (processes of killed workers that
/// were re-parented to the judge, which is a child subreaper). Returns how many.
int reap_orphans();

}  // namespace fp4arena
