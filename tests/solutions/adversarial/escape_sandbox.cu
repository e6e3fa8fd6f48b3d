// Cheat attempt: from inside solve(), open a network socket, start a process (fork) and run
// a program (exec). The worker's seccomp sandbox refuses all three (EPERM). If any of them
// worked, this fixture writes a NaN into c, so the case fails: the judge's test asserts it
// passes, i.e. that every attempt was refused.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "naive_kernel.cuh"

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
  std::fprintf(stderr, "escape_sandbox: socket %s, fork %s, exec %s\n", s >= 0 ? "OPEN" : "refused",
               pid >= 0 ? "STARTED" : "refused", escaped ? "?" : "refused");
  if (escaped) {
    const __half nan = __ushort_as_half(0x7E00);
    cudaMemcpy(c, &nan, sizeof nan, cudaMemcpyHostToDevice);
  }
}
