// fp4arena_syscall_census: runs a command (a judge) under ptrace, following every fork, clone
// and exec, and counts the system calls of each worker process (fp4arena_worker, or python3
// running fp4arena_python_worker.py) and of the programs a filtered worker runs (a Triton
// worker's compilers inherit its filter): the calls made before the seccomp filter is in
// place and those after, with the ioctl
// requests, prctl options, socket domains and clone flags it uses. The census is what an
// allowlist filter for the worker has to let through (issue: the worker's seccomp
// allowlist); run it on the GPU machine over every bundled solution.
//
//   fp4arena_syscall_census OUT.json -- build/run_challenge challenges/x --solution y.cu ...
//
// Names come from the kernel's asm/unistd_64.h where it is installed, else numbers are shown.
// x86-64 only. The traced command's exit status is this program's.
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace {

constexpr long kSeccomp = 317;  // __NR_seccomp on x86-64
constexpr long kPrctl = 157;
constexpr long kIoctl = 16;
constexpr long kSocket = 41;
constexpr long kClone = 56, kClone3 = 435;
constexpr long kPrSetSeccomp = 22;

struct Tracee {
  pid_t tgid = 0;
  bool worker = false;
  bool in_call = false;
  bool fresh = true;  // its first stop (a SIGSTOP ptrace sends) not yet seen
  long nr = -1;
};

struct Census {
  std::map<long, long> before, after;  // syscall number -> calls, per side of the filter
  std::set<unsigned long> ioctls, prctls, sockets, clone_flags;
  std::set<pid_t> filtered;  // worker processes whose filter is in place
  int workers = 0;
};

std::map<long, std::string> syscall_names() {
  std::map<long, std::string> names;
  for (const char* path :
       {"/usr/include/x86_64-linux-gnu/asm/unistd_64.h", "/usr/include/asm/unistd_64.h"}) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string define, name;
      long nr = -1;
      if (ls >> define >> name >> nr && define == "#define" && name.rfind("__NR_", 0) == 0) {
        names[nr] = name.substr(5);
      }
    }
    if (!names.empty()) break;
  }
  return names;
}

std::string program_of(pid_t pid) {
  char buf[4096];
  const std::string link = "/proc/" + std::to_string(pid) + "/exe";
  const ssize_t n = readlink(link.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string path(buf, size_t(n));
  return path.substr(path.find_last_of('/') + 1);
}

// Whether the process `pid` just exec'd a worker: the CUDA worker, or python3 hosting the
// Python worker's script.
bool is_worker(pid_t pid) {
  const std::string program = program_of(pid);
  if (program == "fp4arena_worker") return true;
  if (program.rfind("python", 0) != 0) return false;  // not a launcher script (a pyenv shim)
  std::ifstream f("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string cmdline((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return cmdline.find("fp4arena_python_worker.py") != std::string::npos;
}

// A syscall stop of `pid`: its entry (counted for workers) or its exit (a filter installed).
void on_syscall_stop(pid_t pid, Tracee& t, Census& c) {
  user_regs_struct regs{};
  if (ptrace(PTRACE_GETREGS, pid, nullptr, &regs) != 0) return;
  t.in_call = !t.in_call;
  if (!t.worker) return;
  if (t.in_call) {
    t.nr = long(regs.orig_rax);
    const bool after = c.filtered.count(t.tgid) > 0;
    ++(after ? c.after : c.before)[t.nr];
    if (!after) return;
    if (t.nr == kIoctl) c.ioctls.insert(regs.rsi);
    if (t.nr == kPrctl) c.prctls.insert(regs.rdi);
    if (t.nr == kSocket) c.sockets.insert(regs.rdi);
    if (t.nr == kClone) c.clone_flags.insert(regs.rdi);
    return;
  }
  const bool installed = (t.nr == kSeccomp || (t.nr == kPrctl && regs.rdi == kPrSetSeccomp));
  if (installed && long(regs.rax) == 0) c.filtered.insert(t.tgid);
}

// A ptrace event stop: a new process or thread inherits its parent's standing; an exec decides
// whether the process is a worker.
void on_event(pid_t pid, int event, std::map<pid_t, Tracee>& tracees, Census& c) {
  Tracee& t = tracees[pid];
  if (event == PTRACE_EVENT_EXEC) {
    // A filter survives exec: what a filtered worker runs stays in the census, filtered.
    const bool inherited = t.worker && c.filtered.count(pid) > 0;
    t.worker = inherited || is_worker(pid);
    t.tgid = pid;
    t.in_call = true;  // the exec's own exit stop comes next
    c.workers += t.worker && !inherited;
    if (!inherited) c.filtered.erase(pid);
    return;
  }
  unsigned long child = 0;
  if (ptrace(PTRACE_GETEVENTMSG, pid, nullptr, &child) != 0) return;
  Tracee& n = tracees[pid_t(child)];
  n.worker = t.worker;
  n.tgid = event == PTRACE_EVENT_CLONE ? t.tgid : pid_t(child);
  if (n.tgid != t.tgid && c.filtered.count(t.tgid)) c.filtered.insert(n.tgid);
  n.in_call = false;
}

nlohmann::json to_json(const Census& c) {
  const std::map<long, std::string> names = syscall_names();
  auto named = [&](const std::map<long, long>& counts) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [nr, n] : counts) {
      auto it = names.find(nr);
      j[it == names.end() ? std::to_string(nr) : it->second] = n;
    }
    return j;
  };
  auto hex = [](const std::set<unsigned long>& values) {
    nlohmann::json j = nlohmann::json::array();
    for (unsigned long v : values) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "0x%lx", v);
      j.push_back(buf);
    }
    return j;
  };
  return {{"workers", c.workers},
          {"before_filter", named(c.before)},
          {"after_filter", named(c.after)},
          {"ioctl_requests", hex(c.ioctls)},
          {"prctl_options", hex(c.prctls)},
          {"socket_domains", hex(c.sockets)},
          {"clone_flags", hex(c.clone_flags)}};
}

// Follows every tracee until the first one (the command) and all others have exited.
int trace(pid_t root, Census& c) {
  std::map<pid_t, Tracee> tracees;
  tracees[root].tgid = root;
  tracees[root].fresh = false;
  int status = 0, exit_code = 1;
  const long opts = PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK |
                    PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL;
  ptrace(PTRACE_SETOPTIONS, root, nullptr, opts);
  ptrace(PTRACE_SYSCALL, root, nullptr, nullptr);
  while (!tracees.empty()) {
    const pid_t pid = waitpid(-1, &status, __WALL);
    if (pid < 0) break;
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
      if (pid == root) exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      tracees.erase(pid);
      continue;
    }
    if (!WIFSTOPPED(status)) continue;
    const int sig = WSTOPSIG(status), event = status >> 16;
    int deliver = 0;
    if (sig == (SIGTRAP | 0x80)) {
      on_syscall_stop(pid, tracees[pid], c);
    } else if (sig == SIGTRAP && event != 0) {
      on_event(pid, event, tracees, c);
    } else if (sig == SIGSTOP && tracees[pid].fresh) {
      tracees[pid].fresh = false;  // a new tracee's first stop, not a signal to pass on
    } else {
      deliver = sig;
    }
    ptrace(PTRACE_SYSCALL, pid, nullptr, reinterpret_cast<void*>(long(deliver)));
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || std::strcmp(argv[2], "--") != 0) {
    std::cerr << "usage: fp4arena_syscall_census OUT.json -- COMMAND [ARGS...]\n";
    return 2;
  }
  const pid_t child = fork();
  if (child < 0) {
    std::perror("fork");
    return 2;
  }
  if (child == 0) {
    ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    raise(SIGSTOP);
    execvp(argv[3], argv + 3);
    std::perror(argv[3]);
    _exit(127);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFSTOPPED(status)) {
    std::cerr << "fp4arena_syscall_census: the command did not stop for tracing\n";
    return 2;
  }
  Census census;
  const int code = trace(child, census);
  std::ofstream out(argv[1]);
  out << to_json(census).dump(1) << "\n";
  if (!out) {
    std::cerr << "fp4arena_syscall_census: cannot write " << argv[1] << "\n";
    return 2;
  }
  std::cerr << "fp4arena_syscall_census: " << census.workers << " worker(s), "
            << census.after.size() << " distinct calls after the filter -> " << argv[1] << "\n";
  return code;
}
