// Cheat attempt: from inside solve(), open a network socket, start a process (fork), run a
// program (exec), create files outside the worker's private folder (next to this source,
// and in the working directory), and open /proc files outside its own threads' for writing. The
// worker's seccomp sandbox refuses the first three (EPERM), Landlock the files (EACCES). If any of
// them worked, this fixture writes a NaN into c, so the case fails: the judge's test asserts it
// passes, i.e. that every attempt was refused. It also fails if its private folder ($TMPDIR) is not
// writable: the sandbox must leave solutions a place for temporary files.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "naive_kernel.cuh"

namespace {

// True when `path` could be created or opened for writing (the file is removed again).
bool wrote_file(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool wrote = write(fd, "x", 1) == 1;
  close(fd);
  unlink(path.c_str());
  return wrote;
}

}  // namespace

extern "C" void solve(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                      const uint8_t* b_scales, float alpha, __half* c, int M, int N, int K) {
  adversarial::launch_naive(a, a_scales, b, b_scales, alpha, c, M, N, K, 0);
  int escaped = 0;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s >= 0) {
    escaped = 1;
    close(s);
  }
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  if (pid > 0) {
    escaped = 1;
    waitpid(pid, nullptr, 0);
  }
  if (system("true") == 0) escaped = 1;  // fork/clone + exec of /bin/sh
  const std::string source = __FILE__;
  const std::string beside = source.substr(0, source.rfind('/') + 1) + "escape_sandbox.written";
  const bool wrote_beside = wrote_file(beside);
  const bool wrote_cwd = wrote_file("fp4arena-escape-sandbox.written");
  if (wrote_beside || wrote_cwd) escaped = 1;
  // /proc outside the worker's own task/ folder: the system's files (writable by root, so
  // only a judge run as root tells the sandbox from plain permissions) and the process's own
  // OOM score (writable by any owner). Opened only, never written.
  int proc_open = 0;
  for (const char* p :
       {"/proc/sysrq-trigger", "/proc/sys/kernel/hostname", "/proc/self/oom_score_adj"}) {
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      ++proc_open;
      close(fd);
    }
  }
  if (proc_open) escaped = 1;
  const char* tmp = std::getenv("TMPDIR");
  const bool private_ok = tmp && wrote_file(std::string(tmp) + "/escape_sandbox.probe");
  std::fprintf(stderr,
               "escape_sandbox: socket %s, fork %s, exec %s, file beside the source %s, file in "
               "the working directory %s, private folder %s, /proc files opened for writing %d\n",
               s >= 0 ? "OPEN" : "refused", pid >= 0 ? "STARTED" : "refused",
               escaped ? "?" : "refused", wrote_beside ? "WRITTEN" : "refused",
               wrote_cwd ? "WRITTEN" : "refused", private_ok ? "writable" : "NOT WRITABLE",
               proc_open);
  if (escaped || !private_ok) {
    const __half nan = __ushort_as_half(0x7E00);
    cudaMemcpy(c, &nan, sizeof nan, cudaMemcpyHostToDevice);
  }
}
