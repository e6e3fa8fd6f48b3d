// Cheat: reach the judge from inside solve(). On its first call the fixture tries, each with a
// call that would change nothing if it got through, what one could use to read the judge's
// seed, stop or kill it, or leave the worker: a perf event on the judge's process (its stack
// holds the seed), a signal to the judge and to the process group (signal 0: only a probe),
// a pidfd of the judge, reading the judge's /proc environ, io_uring (whose socket operation
// got past seccomp's socket rule), BPF, a SysV shared-memory segment, an AF_INET socket and
// typing into a terminal (TIOCSTI on stdout), calls that change the machine (reboot, clock,
// host name, modules, namespaces, mounts, the kernel log, keyrings, SysV queues: each made so
// that it changes nothing even if it got through), and signal 0 to every other judge or worker
// it finds under /proc. It prints "reach_the_judge: NAME refused" or
// "... NAME ALLOWED" for each, then computes the right answer with the naive kernel. The
// judge must give `passed` and every probe must say refused
// (tests/harness/gpu_adversarial_test.cc, ProbesOfTheJudgeAreRefused).
#include <dirent.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "naive_kernel.cuh"

namespace {

void report(const char* name, bool allowed) {
  std::fprintf(stderr, "reach_the_judge: %s %s\n", name, allowed ? "ALLOWED" : "refused");
}

// A call is refused when it fails with EPERM (the sandbox's answer) before doing anything.
bool refused(long result) {
  return result == -1 && errno == EPERM;
}

// Calls that change the machine, each made so that it would change nothing if it got through:
// reboot with no valid magic number (EINVAL), a clock that does not exist, a host name longer
// than any allowed, no module image, unshare of nothing, a mount on a path that does not
// exist; and the kernel log's size, a keyring's id, a SysV message queue (removed at once).
void probe_machine() {
  report("reboot (bad magic)", !refused(syscall(SYS_reboot, 0, 0, 0, nullptr)));
  timespec ts{};
  report("clock_settime (no such clock)", !refused(syscall(SYS_clock_settime, 12345, &ts)));
  static char name[300] = {};
  report("sethostname (too long)", !refused(syscall(SYS_sethostname, name, sizeof name)));
  report("init_module (no image)", !refused(syscall(SYS_init_module, nullptr, 0, "")));
  report("unshare(0)", !refused(syscall(SYS_unshare, 0)));
  report("mount (no such path)",
         !refused(syscall(SYS_mount, "none", "/nonexistent/fp4arena", "tmpfs", 0, nullptr)));
  report("syslog (log size)", !refused(syscall(SYS_syslog, 10, nullptr, 0)));
  report("keyctl (session keyring id)", !refused(syscall(SYS_keyctl, 0, -3, 0)));
  const long q = syscall(SYS_msgget, 0 /* IPC_PRIVATE */, 01600);
  report("msgget", !refused(q));
  if (q >= 0) syscall(SYS_msgctl, q, 0 /* IPC_RMID */, nullptr);
}

// Signal 0 to every other judge, worker or test process of the project the worker can see
// (two judges may share a GPU, as under ci_leaderboard --gpus): a probe, nothing more.
void probe_other_judges(pid_t judge) {
  int found = 0, reached = 0;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      const pid_t pid = pid_t(std::atoi(e->d_name));
      if (pid <= 0 || pid == getpid() || pid == judge) continue;
      const std::string path = std::string("/proc/") + e->d_name + "/comm";
      const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      char comm[32] = {};
      const ssize_t n = read(fd, comm, sizeof comm - 1);
      close(fd);
      const std::string name(comm, n > 0 ? size_t(n) : 0);
      if (name.rfind("run_challenge", 0) != 0 && name.rfind("fp4arena_", 0) != 0) continue;
      ++found;
      reached += kill(pid, 0) == 0;
    }
    closedir(d);
  }
  std::fprintf(stderr, "reach_the_judge: %d other judges, workers or tests found\n", found);
  if (found > 0) report("kill(another judge or worker, 0)", reached > 0);
}

void probe_all() {
  const pid_t judge = getppid();
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_DUMMY;
  attr.disabled = 1;
  long fd = syscall(SYS_perf_event_open, &attr, judge, -1, -1, 0);
  report("perf_event_open(judge)", fd >= 0);
  if (fd >= 0) close(int(fd));
  report("kill(judge, 0)", kill(judge, 0) == 0);
  report("kill(process group, 0)", kill(0, 0) == 0);
  fd = syscall(SYS_pidfd_open, judge, 0);
  report("pidfd_open(judge)", fd >= 0);
  if (fd >= 0) close(int(fd));
  const std::string environ_path = "/proc/" + std::to_string(judge) + "/environ";
  fd = open(environ_path.c_str(), O_RDONLY | O_CLOEXEC);
  char byte = 0;
  report("read /proc/<judge>/environ", fd >= 0 && read(int(fd), &byte, 1) >= 0);
  if (fd >= 0) close(int(fd));
  unsigned char params[120] = {};  // struct io_uring_params: zeroed asks for defaults
  fd = syscall(SYS_io_uring_setup, 1, params);
  report("io_uring_setup", fd >= 0);
  if (fd >= 0) close(int(fd));
  report("bpf", syscall(SYS_bpf, 0xFFFF, nullptr, 0) >= 0 || errno != EPERM);
  const int shm = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
  report("shmget", shm >= 0);
  if (shm >= 0) shmctl(shm, IPC_RMID, nullptr);
  const int sock = socket(AF_INET, SOCK_STREAM, 0);
  report("socket(AF_INET)", sock >= 0);
  if (sock >= 0) close(sock);
  char c = '\n';  // stdout is the judge's pipe, never a terminal: ENOTTY if not refused first
  report("ioctl(TIOCSTI)", ioctl(1, TIOCSTI, &c) == 0 || errno != EPERM);
  probe_machine();
  probe_other_judges(judge);
}

}  // namespace

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  static bool probed = false;
  if (!probed) {
    probed = true;
    probe_all();
  }
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, M, N, K);
}
