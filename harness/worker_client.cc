#include "harness/worker_client.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "harness/process.h"
#include "harness/text.h"

namespace fp4arena {
namespace {

// A string field of a message, or `fallback` when absent or of another type: replies come
// from a process that runs user code, so nothing about their shape is assumed.
std::string text_field(const nlohmann::json& m, const char* key, const std::string& fallback) {
  if (!m.is_object()) return fallback;
  auto it = m.find(key);
  if (it == m.end() || !it->is_string()) return fallback;
  std::string s = it->get<std::string>();
  return s.size() > 500 ? s.substr(0, 500) + "..." : s;
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    return std::string("killed by signal ") + std::to_string(sig) + " (" +
           (name ? name : "unknown") + ")";
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended (status " + std::to_string(status) + ")";
}

}  // namespace

int reap_orphans() {
  int n = 0;
  pid_t self = getpid();
  DIR* d = opendir("/proc");
  if (!d) return 0;
  std::vector<pid_t> kids;
  while (dirent* e = readdir(d)) {
    char* end;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::ifstream stat(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    char state;
    long ppid;
    if (sscanf(line.c_str() + close + 1, " %c %ld", &state, &ppid) == 2 && ppid == self) {
      kids.push_back(static_cast<pid_t>(pid));
    }
  }
  closedir(d);
  for (pid_t k : kids) {
    kill(k, SIGKILL);
    waitpid(k, nullptr, 0);
    ++n;
  }
  return n;
}

namespace {

// Copies what the worker prints (fd `from`, until every writer closed it) to the judge's
// stderr, each line prefixed, at most kSolutionOutputBytes of it; then says how much more
// there was.
void relay_output(int from) {
  std::string line;
  size_t shown = 0, dropped = 0;
  char buf[4096];
  auto flush_line = [&] {
    if (line.empty()) return;
    const std::string out = kSolutionOutputPrefix + line + (line.back() == '\n' ? "" : "\n");
    if (write(2, out.data(), out.size()) < 0) dropped += line.size();
    line.clear();
  };
  for (;;) {
    ssize_t n = read(from, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (shown >= kSolutionOutputBytes) {
        ++dropped;
        continue;
      }
      line += buf[i];
      ++shown;
      if (buf[i] == '\n' || line.size() >= 4096) flush_line();
    }
  }
  flush_line();
  close(from);
  if (dropped > 0) {
    const std::string note =
        "fp4arena: the solution printed " + std::to_string(dropped) + " more bytes (not shown)\n";
    if (write(2, note.data(), note.size()) < 0) return;
  }
}

// In the worker's child, before exec: stdin from /dev/null, stdout and stderr into the relay's
// pipe (so no descriptor of the judge's terminal reaches the solution).
void redirect_stdio(int out) {
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd >= 0) dup2(null_fd, 0);
  dup2(out, 1);
  dup2(out, 2);
}

// Every folder on the way to `path` searchable by other users, and the file itself readable
// (and executable when `exec`) by them.
bool open_to_others(const std::string& given, bool exec) {
  char* real = realpath(given.c_str(), nullptr);
  if (!real) return false;
  const std::string path = real;
  free(real);
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return false;
  if (!(st.st_mode & S_IROTH) || (exec && !(st.st_mode & S_IXOTH))) return false;
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    if (stat(path.substr(0, slash).c_str(), &st) != 0 || !(st.st_mode & S_IXOTH)) return false;
  }
  return true;
}

// CUDA's driver opens /dev/nvidia* read-write: each must be so for other users.
bool nvidia_devices_open_to_others(std::string* why_not) {
  DIR* d = opendir("/dev");
  bool ok = true;
  while (dirent* e = d ? readdir(d) : nullptr) {
    const std::string name = e->d_name;
    if (name.rfind("nvidia", 0) != 0) continue;
    struct stat st;
    const std::string path = "/dev/" + name;
    if (stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode) &&
        (st.st_mode & (S_IROTH | S_IWOTH)) != (S_IROTH | S_IWOTH)) {
      *why_not = path + " is not readable and writable by other users";
      ok = false;
      break;
    }
  }
  if (d) closedir(d);
  return ok;
}

// Where workers' private folders are made: $TMPDIR, else /tmp.
std::string private_dir_base() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

// A copy of `src` in `dir`, owned by the judge and read-only (`mode`), whose path goes to
// `*path`. A worker of its own user reads its program and the solution from its private
// folder: the build and the compile cache may sit in folders only the judge may enter.
bool stage_copy(const std::string& src, const std::string& dir, mode_t mode, std::string* path,
                std::string* err, const std::string& name = "") {
  const std::string dst = dir + "/" + (name.empty() ? base_name(src) : name);
  std::error_code ec;
  std::filesystem::copy_file(src, dst, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec || chmod(dst.c_str(), mode) != 0) {
    *err = "cannot copy " + src + " into the worker's private folder " + dir + ": " +
           (ec ? ec.message() : std::strerror(errno));
    return false;
  }
  *path = dst;
  return true;
}

// "solution" with the solution file's extension (".so", ".py").
std::string solution_name(const std::string& path) {
  const std::string name = base_name(path);
  const size_t dot = name.rfind('.');
  return "solution" + (dot == std::string::npos ? std::string() : name.substr(dot));
}

WorkerIdentity worker_identity(const WorkerOptions& opts) {
  WorkerIdentity id;
  if (!opts.own_user) {
    id.why_not = opts.own_user_off;
  } else if (!opts.wrapper.empty()) {
    id.why_not = "under a tool";
  } else if (geteuid() != 0) {
    id.why_not = "the judge is not root";
  } else if (!open_to_others(private_dir_base(), true)) {
    id.why_not =
        "the folder for its private folder (" + private_dir_base() + ") is not open to other users";
  } else if (!nvidia_devices_open_to_others(&id.why_not)) {
  } else {
    id.use = true;
    id.uid = id.gid = kWorkerIdBase + static_cast<uint32_t>(getpid()) % kWorkerIdSpan;
  }
  return id;
}

// In the worker's child, before exec: no supplementary groups, the worker's gid and uid (real,
// effective and saved), every capability dropped from the bounding set first, and securebits
// locked so that no exec can make it root again. False when any step failed.
bool become(const WorkerIdentity& id) {
  for (int cap = 0; cap <= 63; ++cap) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  // securebits (linux/securebits.h): NOROOT on; NO_SETUID_FIXUP and KEEP_CAPS off (the uid
  // change below clears every capability); all three locked.
  const unsigned long bits = (1ul << 0) | (1ul << 1) | (1ul << 3) | (1ul << 5);
  return prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) == 0 && setgroups(0, nullptr) == 0 &&
         setresgid(id.gid, id.gid, id.gid) == 0 && setresuid(id.uid, id.uid, id.uid) == 0 &&
         prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0;
}

// The worker's child, after fork: its own process group; only the channel, the shared memory
// and (outside tools) the output pipe are inherited; the environment the sandbox expects; the
// worker's own user where there is one; then the worker (or the tool that runs it).
[[noreturn]] void exec_worker_child(const WorkerOptions& opts, const WorkerIdentity& id,
                                    int sock_fd, int shm_fd, int out_fd,
                                    const std::string& private_dir, std::vector<char*>& argv) {
  setpgid(0, 0);
  if (out_fd >= 0) redirect_stdio(out_fd);
  int sock = dup(sock_fd);
  int shm = dup(shm_fd);
  dup2(sock, kWorkerSocketFd);
  dup2(shm, kWorkerShmFd);
  long max_fd = sysconf(_SC_OPEN_MAX);
  if (max_fd < 0 || max_fd > 65536) max_fd = 65536;
  for (int fd = kWorkerShmFd + 1; fd < max_fd; ++fd) close(fd);
  // Tools (compute-sanitizer, ncu) inject into the worker and need what the sandbox
  // refuses; otherwise the sandbox is always on, whatever the judge's environment says.
  if (opts.wrapper.empty()) {
    unsetenv("FP4ARENA_NO_SANDBOX");
    setenv("FP4ARENA_SECCOMP", opts.seccomp_allowlist ? "allowlist" : "denylist", 1);
    // Temporary files, and CUDA's JIT cache (a cache shared with other runs could be
    // poisoned), go to the private folder.
    setenv("TMPDIR", private_dir.c_str(), 1);
    setenv("CUDA_CACHE_PATH", (private_dir + "/cuda-cache").c_str(), 1);
    // Every kernel loaded when its module is: a lazy load at a solution's first launch,
    // queued behind the window's wait for the go word, could wait for that same stream.
    setenv("CUDA_MODULE_LOADING", "EAGER", 1);
  } else {
    setenv("FP4ARENA_NO_SANDBOX", "1", 1);
  }
  if (id.use && !become(id)) {
    dprintf(2, "fp4arena: cannot become the worker's user %u: %s\n", unsigned(id.uid),
            std::strerror(errno));
    _exit(126);
  }
  execvp(argv[0], argv.data());
  dprintf(2, "fp4arena: cannot start worker %s: %s\n", argv[0], std::strerror(errno));
  _exit(127);
}

}  // namespace

std::unique_ptr<WorkerProcess> WorkerProcess::start(const WorkerOptions& opts, std::string* err) {
  WorkerIdentity id = worker_identity(opts);
  std::unique_ptr<WorkerProcess> w = start_as(opts, id, err);
  if (w || !id.use) return w;
  id.use = false;
  id.why_not = "it could not start as its own user: " + *err;
  err->clear();
  return start_as(opts, id, err);
}

std::unique_ptr<WorkerProcess> WorkerProcess::start_as(const WorkerOptions& opts,
                                                       const WorkerIdentity& id, std::string* err) {
  // Processes a worker leaves behind are re-parented to the judge, which then reaps them.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::unique_ptr<WorkerProcess> w(new WorkerProcess());
  w->exit_grace_seconds_ = opts.exit_grace_seconds;
  if (!w->shm_.create(opts.shm_bytes, err)) return nullptr;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    *err = std::string("socketpair failed: ") + std::strerror(errno);
    return nullptr;
  }
  std::string shm_bytes = std::to_string(opts.shm_bytes);
  std::string device = std::to_string(opts.device);
  // The tool, if any, runs the worker: its argv comes first.
  std::string worker_path = opts.worker_path, so_path = opts.so_path, host = opts.host_script;
  if (!w->make_private_dir_for(opts, id, &worker_path, &so_path, &host, err)) {
    close(sv[0]);
    close(sv[1]);
    return nullptr;
  }
  std::vector<std::string> argv_s = opts.wrapper;
  if (!host.empty()) {
    argv_s.insert(argv_s.end(), opts.interpreter.begin(), opts.interpreter.end());
    argv_s.push_back(host);
  }
  for (const std::string& a :
       {worker_path, std::string("--so"), so_path, std::string("--shm-bytes"), shm_bytes,
        std::string("--device"), device}) {
    argv_s.push_back(a);
  }
  if (!w->private_dir_.empty()) {
    argv_s.push_back("--tmp");
    argv_s.push_back(w->private_dir_);
  }
  argv_s.insert(argv_s.end(), opts.extra_args.begin(), opts.extra_args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(&a[0]);
  argv.push_back(nullptr);
  // Under a tool the worker keeps the judge's stdio: the tool reports there.
  int out_pipe[2] = {-1, -1};
  if (opts.wrapper.empty() && pipe2(out_pipe, O_CLOEXEC) != 0) {
    *err = std::string("pipe failed: ") + std::strerror(errno);
    close(sv[0]);
    close(sv[1]);
    return nullptr;
  }
  pid_t pid = fork();
  if (pid < 0) {
    *err = std::string("fork failed: ") + std::strerror(errno);
    for (int fd : {sv[0], sv[1], out_pipe[0], out_pipe[1]}) {
      if (fd >= 0) close(fd);
    }
    return nullptr;
  }
  if (pid == 0)
    exec_worker_child(opts, id, sv[1], w->shm_.fd(), out_pipe[1], w->private_dir_, argv);
  setpgid(pid, pid);
  close(sv[1]);
  w->sock_ = sv[0];
  w->pid_ = pid;
  if (out_pipe[0] >= 0) {
    close(out_pipe[1]);
    w->relay_ = std::thread(relay_output, out_pipe[0]);
  }

  return await_hello(std::move(w), opts, id, err);
}

// A sandboxed worker may change files only in a private folder, made here (the worker may be
// killed at any time: the judge removes it with the worker). A worker of its own user owns
// it and finds its program and the solution copied there. Under a tool, none: the tool
// writes where it was told to.
bool WorkerProcess::make_private_dir_for(const WorkerOptions& opts, const WorkerIdentity& id,
                                         std::string* worker_path, std::string* so_path,
                                         std::string* host_script, std::string* err) {
  if (!opts.wrapper.empty()) return true;
  private_dir_ = make_private_dir(private_dir_base(), "fp4arena-worker-", err);
  if (private_dir_.empty()) return false;
  if (!id.use) return true;
  if (!stage_copy(opts.worker_path, private_dir_, 0555, worker_path, err) ||
      // A name of the judge's choosing: a solution named like the worker or its host script
      // cannot replace them.
      !stage_copy(opts.so_path, private_dir_, 0444, so_path, err, solution_name(opts.so_path)) ||
      (!opts.host_script.empty() &&
       !stage_copy(opts.host_script, private_dir_, 0444, host_script, err))) {
    return false;
  }
  if (chown(private_dir_.c_str(), id.uid, id.gid) != 0) {
    *err = private_dir_ + ": cannot give it to the worker's user: " + std::strerror(errno);
    return false;
  }
  return true;
}

std::unique_ptr<WorkerProcess> WorkerProcess::await_hello(std::unique_ptr<WorkerProcess> w,
                                                          const WorkerOptions& opts,
                                                          const WorkerIdentity& id,
                                                          std::string* err) {
  nlohmann::json hello;
  std::string recv_err;
  RecvStatus st = recv_message(w->sock_, static_cast<int>(opts.start_timeout_seconds * 1000),
                               &hello, &recv_err);
  if (st == RecvStatus::kOk && text_field(hello, "op", "") == "hello") {
    w->own_user_ = id.use;
    w->sandbox_ = text_field(hello, "sandbox", "unknown") + "; " +
                  (id.use ? "its own user (uid " + std::to_string(id.uid) +
                                ", no capabilities, securebits locked)"
                          : "the judge's user (" + id.why_not + ")");
    return w;
  }
  if (st == RecvStatus::kOk && text_field(hello, "op", "") == "fatal") {
    *err = "worker could not start: " + text_field(hello, "error", "unknown error");
  } else if (st == RecvStatus::kTimeout) {
    *err = "worker did not start within " + std::to_string(int(opts.start_timeout_seconds)) + " s";
  } else if (st == RecvStatus::kClosed) {
    CallReply r = w->reap_after_close();
    *err = "worker could not start: it " + r.detail;
  } else {
    *err = "worker could not start: " + recv_err;
  }
  w->kill_all();
  return nullptr;
}

WorkerProcess::~WorkerProcess() {
  if (pid_ > 0) {
    std::string ignored;
    send_message(sock_, {{"op", "quit"}}, &ignored, 100);
    for (int i = 0; i < exit_grace_seconds_ * 100; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  kill_all();
  if (sock_ >= 0) close(sock_);
  if (relay_.joinable()) relay_.join();
}

void WorkerProcess::kill_all() {
  if (pid_ > 0) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  reap_orphans();
  // Nothing of the worker runs any more: its private folder goes.
  if (!private_dir_.empty()) {
    remove_tree(private_dir_);
    private_dir_.clear();
  }
}

CallReply WorkerProcess::reap_after_close() {
  CallReply r;
  for (int i = 0; i < 300; ++i) {  // up to 3 s for the process to finish exiting
    int status = 0;
    pid_t got = waitpid(pid_, &status, WNOHANG);
    if (got == pid_) {
      pid_ = -1;
      r.outcome = WIFSIGNALED(status) ? CallOutcome::kCrashed : CallOutcome::kEarlyExit;
      r.detail = describe_status(status);
      kill_all();
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  r.outcome = CallOutcome::kWorkerError;
  r.detail = "closed its channel to the judge but kept running (killed)";
  kill_all();
  return r;
}

CallReply WorkerProcess::call(const nlohmann::json& request, double timeout_seconds) {
  CallReply r;
  if (!send(request, &r)) return r;
  return receive(timeout_seconds);
}

bool WorkerProcess::send(const nlohmann::json& request, CallReply* failed) {
  if (pid_ <= 0) {
    *failed = CallReply{};
    failed->detail = "worker is not running";
    return false;
  }
  std::string err;
  if (send_message(sock_, request, &err, kSendTimeoutMs)) return true;
  if (err.rfind("the peer stopped reading", 0) == 0) {
    // Stopped (SIGSTOP) or not reading: a worker that will not take its request is killed.
    kill_all();
    *failed = CallReply{};
    failed->outcome = CallOutcome::kTimeout;
    failed->detail = "no room on the channel for " + std::to_string(kSendTimeoutMs / 1000) +
                     " s: the worker stopped reading its requests (killed)";
    return false;
  }
  *failed = reap_after_close();
  return false;
}

CallReply WorkerProcess::receive(double timeout_seconds, bool kill_on_timeout) {
  CallReply r;
  if (pid_ <= 0) {
    r.detail = "worker is not running";
    return r;
  }
  std::string err;
  nlohmann::json reply;
  RecvStatus st =
      recv_message(sock_, static_cast<int>(timeout_seconds * 1000), &reply, &err, kChannelSpinMs);
  if (st == RecvStatus::kTimeout) {
    r.outcome = CallOutcome::kTimeout;
    r.detail = "no answer within " + std::to_string(timeout_seconds) + " s";
    if (!kill_on_timeout) return r;
    kill_all();
    r.detail += " (killed)";
    return r;
  }
  if (st == RecvStatus::kClosed) return reap_after_close();
  if (st == RecvStatus::kError) {
    kill_all();
    r.detail = "broken channel: " + err;
    return r;
  }
  if (!reply.is_object()) {
    kill_all();
    r.detail = "malformed reply: not a JSON object";
    return r;
  }
  if (text_field(reply, "op", "") == "fatal") {
    kill_all();
    r.detail = text_field(reply, "error", "worker failed");
    return r;
  }
  if (text_field(reply, "op", "") == "queued") {
    r.outcome = CallOutcome::kOk;
    r.data = std::move(reply);
    return r;
  }
  auto ok = reply.find("ok");
  if (ok == reply.end() || !ok->is_boolean()) {
    kill_all();
    r.detail = "malformed reply: no boolean 'ok'";
    return r;
  }
  if (!ok->get<bool>()) {
    kill_all();
    r.outcome = CallOutcome::kCudaError;
    r.detail = text_field(reply, "cuda_error", "CUDA error") + " (in " +
               text_field(reply, "where", "solve()") + ")";
    return r;
  }
  r.outcome = CallOutcome::kOk;
  r.data = std::move(reply);
  return r;
}

}  // namespace fp4arena
